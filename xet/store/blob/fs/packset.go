package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/internal/regfile"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// packSet is a process's view of the packs under root/packs. A blob is looked up on disk in each
// pack's sorted index (sorted.go), which covers most of the pack's entries, and in memory among the
// rest, its tail: the .idx entries written since that index, read when a lookup misses (another
// process may have added the blob) and added by this process's own writer. What a process holds
// is thus bounded by the tails, not by the store.
//
// Concurrency: safe for concurrent use.
type packSet struct {
	dir     string
	minTail int // sortMinTail; smaller in tests, to sort small stores

	mu       sync.RWMutex
	packs    map[string]*packReader // by id
	retired  map[*time.Timer]func() // files to close once lookups in flight are done (retireLocked)
	dirMtime time.Time
	listedAt time.Time
	scratch  []byte // tail's read buffer (ps.mu held)

	refreshedAt atomic.Int64 // unix nanos of the last refresh

	// gen moves on whenever the set gains or loses entries (with ps.mu held, before the change
	// is seen): a lookup that missed needs no second pass while gen is what it was when its
	// first pass started.
	gen atomic.Uint64
}

// existsRefreshInterval: a miss of an existence check (before a write, or HasXorb) reads the other
// processes' new index entries at most this often; a miss of a read always does. A stale miss only
// costs a duplicate write of the same content.
const existsRefreshInterval = 100 * time.Millisecond

// missAgain ends a lookup for an existence check (before a write, or HasXorb) whose pass, started
// at gen, missed: it refreshes when stale and looks again only when the set changed since. It may
// miss a blob another process indexed in the last existsRefreshInterval.
func (ps *packSet) missAgain(name string, gen uint64) (bool, error) {
	if err := ps.refreshIfStale(); err != nil {
		return false, err
	}
	if ps.gen.Load() == gen {
		return false, nil
	}
	_, ok, err := ps.get(name)
	return ok, err
}

// refreshIfStale refreshes when the last refresh is older than existsRefreshInterval.
func (ps *packSet) refreshIfStale() error {
	if time.Now().UnixNano()-ps.refreshedAt.Load() < int64(existsRefreshInterval) {
		return nil
	}
	return ps.refresh()
}

// packReader is one pack open for reading: its sorted index, and the entries of its .idx past it
// read so far (ps.mu guards the fields below the files).
type packReader struct {
	id   string
	pack *os.File
	idx  *os.File

	sorted  *sortedIndex // nil: none yet; covers the .idx up to sorted.idxEnd
	tail    packTail     // the entries of the .idx from sorted.idxEnd to idxOff
	idxOff  int64        // of the .idx, read
	dataEnd int64        // of the records indexed so far
	sorting atomic.Bool  // a sortIfLarge of this pack is running
}

// packLoc is where a packed blob's data lies.
type packLoc struct {
	r    *packReader
	off  int64
	n    int64
	data []byte // the blob's bytes when the lookup read them (a small blob), else nil
}

func newPackSet(dir string) *packSet {
	return &packSet{dir: dir, minTail: sortMinTail, packs: map[string]*packReader{}}
}

// get looks name up in what is already indexed: the tails in memory, then the sorted indexes.
func (ps *packSet) get(name string) (packLoc, bool, error) {
	key := nameKey(name)
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for _, r := range ps.packs {
		e, data, ok, err := r.tail.find(r.pack, name, key)
		if err != nil || ok {
			return packLoc{r: r, off: e.off, n: e.n, data: data}, ok, err
		}
	}
	for _, r := range ps.packs {
		if r.sorted == nil {
			continue
		}
		e, data, ok, err := r.sorted.find(r.pack, name, key)
		if err != nil || ok {
			return packLoc{r: r, off: e.off, n: e.n, data: data}, ok, err
		}
	}
	return packLoc{}, false, nil
}

// lookup looks name up, reading what other processes added when it is not indexed yet.
func (ps *packSet) lookup(name string) (packLoc, bool, error) {
	if l, ok, err := ps.get(name); ok || err != nil {
		return l, ok, err
	}
	if err := ps.refresh(); err != nil {
		return packLoc{}, false, err
	}
	return ps.get(name)
}

// coarseMtime: a directory listed this long after its last change is known to be listed whole.
const coarseMtime = time.Second

// refresh opens packs created since the last listing and reads the new entries of every index;
// then it sorts the tails that grew large (sortIfLarge).
func (ps *packSet) refresh() error {
	large, err := ps.refreshLocked()
	for _, r := range large {
		if err == nil {
			err = ps.sortIfLarge(r)
		}
	}
	return err
}

func (ps *packSet) refreshLocked() (large []*packReader, err error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.refreshedAt.Store(time.Now().UnixNano())
	st, err := os.Stat(ps.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: packs: %w", err)
	}
	if !st.ModTime().Equal(ps.dirMtime) || ps.listedAt.Sub(st.ModTime()) < coarseMtime {
		listed := time.Now()
		if err := ps.openNew(); err != nil {
			return nil, err
		}
		ps.dirMtime, ps.listedAt = st.ModTime(), listed
	}
	for _, r := range ps.packs {
		if err := ps.tail(r); err != nil {
			return nil, err
		}
		if r.tailLarge(ps.minTail) {
			large = append(large, r)
		}
	}
	return large, nil
}

// openNew opens the packs not open yet; a pack whose index lags its records and that no writer
// holds is repaired first (see pack.go). ps.mu is held.
func (ps *packSet) openNew() error {
	ents, err := os.ReadDir(ps.dir)
	if err != nil {
		return fmt.Errorf("store: packs: %w", err)
	}
	listed := make(map[string]bool, len(ents))
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), idxExt); ok {
			listed[id] = true
		}
	}
	var gone []string
	for id := range ps.packs {
		if !listed[id] {
			gone = append(gone, id)
		}
	}
	ps.dropLocked(gone)
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), idxExt)
		if !ok || ps.packs[id] != nil {
			continue
		}
		r, err := ps.openPackReader(id)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a writer is creating it: its .pack comes first, so this is a removed pack
		}
		if err != nil {
			return err
		}
		ps.gen.Add(1)
		ps.packs[id] = r
	}
	return nil
}

// dropLocked forgets packs gc removed (their blobs were written to other packs first). The dropped
// packs' files are closed a minute later, after reads in flight. ps.mu is held.
func (ps *packSet) dropLocked(ids []string) {
	var old []*packReader
	for _, id := range ids {
		if r := ps.packs[id]; r != nil {
			old = append(old, r)
			delete(ps.packs, id)
		}
	}
	if len(old) == 0 {
		return
	}
	ps.gen.Add(1)
	ps.retireLocked(func() {
		for _, r := range old {
			r.close()
		}
	})
}

// retireLocked runs closeFiles a minute from now, when the lookups in flight that may still read
// those files are done, or at close, whichever comes first. ps.mu is held.
func (ps *packSet) retireLocked(closeFiles func()) {
	if ps.retired == nil {
		ps.retired = map[*time.Timer]func(){}
	}
	var t *time.Timer
	t = time.AfterFunc(time.Minute, func() {
		ps.mu.Lock()
		_, ok := ps.retired[t]
		delete(ps.retired, t)
		ps.mu.Unlock()
		if ok {
			closeFiles()
		}
	})
	ps.retired[t] = closeFiles
}

// close closes every file the set holds open, the retired ones too. The set stays usable: the next
// lookup lists the directory again and opens what it needs.
func (ps *packSet) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for t, closeFiles := range ps.retired {
		t.Stop()
		closeFiles()
	}
	ps.retired = nil
	for id, r := range ps.packs {
		r.close()
		delete(ps.packs, id)
	}
	ps.dirMtime, ps.listedAt = time.Time{}, time.Time{}
	ps.refreshedAt.Store(0)
	ps.gen.Add(1)
}

func (r *packReader) close() {
	r.pack.Close()
	r.idx.Close()
	if r.sorted != nil {
		r.sorted.f.Close()
	}
}

// fresh refreshes when the last refresh is over PackStaleness old: a process notices packs gc
// removed (and what they held) within that time, even when all its lookups hit.
func (ps *packSet) fresh() error {
	if time.Now().UnixNano()-ps.refreshedAt.Load() < int64(PackStaleness) {
		return nil
	}
	return ps.refresh()
}

// PackStaleness bounds how long a process may go on finding a blob gc removed from a pack.
const PackStaleness = time.Second

// openPackReader opens pack id and reads its tail; a pack whose records go past what its index
// names and that no writer holds is repaired first (recoverPack), so that readers see every
// acknowledged blob without waiting for the next writer to claim it. ps.mu is held.
func (ps *packSet) openPackReader(id string) (*packReader, error) {
	r, err := openPackFiles(ps.dir, id)
	if err != nil {
		return nil, err
	}
	if err := ps.tail(r); err != nil {
		r.close()
		return nil, err
	}
	st, err := r.pack.Stat()
	if err != nil {
		r.close()
		return nil, fmt.Errorf("store: pack %s: %w", id, err)
	}
	if st.Size() <= r.dataEnd {
		return r, nil
	}
	pack, idx, _, _, err := lockAndRecover(ps.dir, id, r.hint())
	if pack != nil {
		pack.Close()
		idx.Close()
		err = ps.tail(r)
	}
	if err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// hint is what r's sorted index says of the start of its .idx, for recoverPack.
func (r *packReader) hint() recoverHint {
	if r.sorted == nil {
		return recoverHint{}
	}
	return recoverHint{idxEnd: r.sorted.idxEnd, dataEnd: r.sorted.dataEnd}
}

// openPackFiles opens pack id's files for reading, its .idx to be read from the end of its sorted
// index.
func openPackFiles(dir, id string) (*packReader, error) {
	pack, err := regfile.Open(filepath.Join(dir, id+packExt), os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("store: opening pack %s: %w", id, err)
	}
	idx, err := regfile.Open(filepath.Join(dir, id+idxExt), os.O_RDONLY)
	if err != nil {
		pack.Close()
		return nil, fmt.Errorf("store: opening pack %s: %w", id, err)
	}
	sorted := openSortedIndex(filepath.Join(dir, id+sortedExt))
	r := &packReader{id: id, pack: pack, idx: idx, idxOff: int64(len(idxMagic)), dataEnd: int64(len(packMagic))}
	if sorted != nil {
		r.sorted, r.idxOff, r.dataEnd = sorted, sorted.idxEnd, sorted.dataEnd
	}
	return r, nil
}

// tail reads the index entries added to r since the last read, a piece at a time (readEntries: a
// long .idx is never read in one allocation of its length). ps.mu is held.
func (ps *packSet) tail(r *packReader) error {
	st, err := r.idx.Stat()
	if err != nil {
		return fmt.Errorf("store: pack %s: %w", r.id, err)
	}
	if st.Size() <= r.idxOff {
		return nil
	}
	need := int(min(st.Size()-r.idxOff, indexPiece))
	if cap(ps.scratch) < need {
		ps.scratch = make([]byte, need)
	}
	var es []packEntry
	used, err := readEntries(r.idx, r.id, r.idxOff, st.Size(), ps.scratch[:need], func(e packEntry) { es = append(es, e) })
	if err != nil {
		return err
	}
	if r.tail.len() == 0 && len(es) > 64 {
		r.tail = newPackTail(len(es))
	}
	if len(es) > 0 {
		ps.gen.Add(1)
	}
	r.add(es)
	r.idxOff = used
	return nil
}

// add puts es in r's tail. ps.mu is held.
func (r *packReader) add(es []packEntry) {
	for _, e := range es {
		r.tail.add(e)
		r.dataEnd = max(r.dataEnd, e.off+e.n)
	}
}

// tailLarge reports whether r's tail is due to be sorted: minTail entries, and a 32nd of the sorted
// ones (sortMinTail). ps.mu is held.
func (r *packReader) tailLarge(minTail int) bool {
	n := r.tail.len()
	return n >= minTail && (r.sorted == nil || n >= r.sorted.count/32)
}

// sortIfLarge makes r's tail small again when it is large: it takes up a newer sorted index another
// process wrote, and writes one covering the tail when that is not enough. A failure to write (a
// store this process may only read) leaves the tail in memory and is not an error.
func (ps *packSet) sortIfLarge(r *packReader) error {
	if !r.sorting.CompareAndSwap(false, true) {
		return nil
	}
	defer r.sorting.Store(false)
	large, old, _, _, _ := ps.snapshot(r, false)
	if !large {
		return nil
	}
	s := openSortedIndex(filepath.Join(ps.dir, r.id+sortedExt))
	if s != nil && (old == nil || s.idxEnd > old.idxEnd) {
		if err := ps.takeSorted(r, s); err != nil {
			return err
		}
	} else if s != nil {
		s.f.Close()
	}
	large, old, tail, idxEnd, dataEnd := ps.snapshot(r, true)
	if !large {
		return nil
	}
	s, err := writeSortedIndex(ps.dir, filepath.Join(filepath.Dir(ps.dir), "tmp"), r.id, r.idx, old, tail, idxEnd, dataEnd)
	if err != nil {
		return nil // the tail stays in memory; the next lookup that grows it tries again
	}
	return ps.takeSorted(r, s)
}

// snapshot returns whether r's tail is large, its sorted index, and with entries its tail's
// entries and ends.
func (ps *packSet) snapshot(r *packReader, entries bool) (large bool, old *sortedIndex, tail []sortedKey, idxEnd, dataEnd int64) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	large, old, idxEnd, dataEnd = r.tailLarge(ps.minTail), r.sorted, r.idxOff, r.dataEnd
	if large && entries {
		tail = r.tail.keys()
	}
	return large, old, tail, idxEnd, dataEnd
}

// takeSorted makes s r's sorted index and reads r's tail again from where s ends.
func (ps *packSet) takeSorted(r *packReader, s *sortedIndex) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.packs[r.id] != r || (r.sorted != nil && r.sorted.idxEnd >= s.idxEnd) {
		s.f.Close()
		return nil
	}
	old := r.sorted
	ps.gen.Add(1) // s may cover entries of another process's that the tail had not read
	r.sorted, r.tail, r.idxOff = s, packTail{}, s.idxEnd
	r.dataEnd = max(r.dataEnd, s.dataEnd)
	if old != nil {
		ps.retireLocked(func() { old.f.Close() })
	}
	return ps.tail(r)
}

// publish indexes the entries this process's writer just made durable and wrote to r's index from
// idxStart to idxEnd.
func (ps *packSet) publish(r *packReader, es []packEntry, idxStart, idxEnd int64) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.packs[r.id] == nil {
		ps.gen.Add(1)
		ps.packs[r.id] = r
	}
	switch {
	case r.idxOff == idxStart:
		ps.gen.Add(1)
		r.add(es)
		r.idxOff = idxEnd
	case r.idxOff < idxEnd: // entries before them (a recovery's) not read yet, or a read that saw part of them
		return ps.tail(r)
	}
	return nil
}

// reader returns the open reader of pack id, opening it when new.
func (ps *packSet) reader(id string) (*packReader, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if r := ps.packs[id]; r != nil {
		return r, nil
	}
	r, err := openPackFiles(ps.dir, id)
	if err != nil {
		return nil, err
	}
	ps.gen.Add(1)
	ps.packs[id] = r
	return r, nil
}

// packListed is a packed blob found by a listing.
type packListed struct {
	name string
	loc  packLoc
	crc  uint32 // of the data, as its .idx entry says
}

// all reads every pack's .idx whole, as far as this process has read it, and returns its blobs
// under prefix, each name once, sorted: what a listing, gc and fsck need, and no lookup keeps.
func (ps *packSet) all(prefix string) ([]packListed, error) {
	if err := ps.refresh(); err != nil {
		return nil, err
	}
	ps.mu.RLock()
	readers := make([]*packReader, 0, len(ps.packs))
	ends := make([]int64, 0, len(ps.packs))
	for _, r := range ps.packs {
		readers, ends = append(readers, r), append(ends, r.idxOff)
	}
	ps.mu.RUnlock()
	seen := map[string]bool{}
	var out []packListed
	buf := make([]byte, 4<<20)
	for i, r := range readers {
		err := readIndex(r, ends[i], buf, func(e packEntry) {
			if strings.HasPrefix(e.name, prefix) && !seen[e.name] {
				seen[e.name] = true
				out = append(out, packListed{e.name, packLoc{r: r, off: e.off, n: e.n}, e.crc})
			}
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// readIndex hands fn every entry of r's .idx up to end, reading it through buf a piece at a time
// (an index of a million entries is about 100 MB).
func readIndex(r *packReader, end int64, buf []byte, fn func(packEntry)) error {
	_, err := readEntries(r.idx, r.id, int64(len(idxMagic)), end, buf, fn)
	return err
}

// indexPiece is the most of an index read at once: never the whole of a long one, whose length
// says nothing of what it holds when a power loss left a tail of zeros, or the file is damaged or
// sparse.
const indexPiece = 4 << 20

// readEntries hands fn the whole entries of pack id's index idx from off (where one starts) to end,
// reading them through buf (longer than an entry) a piece at a time, and returns where those
// entries end: at end, or at the first entry cut short or damaged, past which nothing is framed.
func readEntries(idx *os.File, id string, off, end int64, buf []byte, fn func(packEntry)) (int64, error) {
	have := 0
	for off+int64(have) < end {
		n, err := idx.ReadAt(buf[have:min(int64(len(buf)), end-off)], off+int64(have))
		if err != nil && !errors.Is(err, io.EOF) {
			return off, fmt.Errorf("store: reading pack index %s: %w", id, err)
		}
		if n == 0 {
			return off, nil // shorter than read before (a power loss): what is left was handed out
		}
		have += n
		es, used := parseIndex(buf[:have])
		for _, e := range es {
			fn(e)
		}
		if used == 0 {
			return off, nil // a damaged entry: the rest cannot be framed
		}
		copy(buf, buf[used:have])
		off, have = off+int64(used), have-used
	}
	return off, nil
}

// packedBlob is a blob inside a pack: a window on the shared pack file (Close leaves it open).
type packedBlob struct {
	r *io.SectionReader
}

func (b packedBlob) Size() int64 { return b.r.Size() }
func (packedBlob) Close() error  { return nil }

// ReadAt implements blob.Blob.
func (b packedBlob) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	return b.r.ReadAt(p, off)
}

// Section implements blob.Blob (a packed blob is at most packMaxBlob long).
func (b packedBlob) Section(_ context.Context, off, n int64) (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(b.r, off, n)), nil
}

func (l packLoc) blob() blob.Blob {
	if l.data != nil {
		return packedBlob{io.NewSectionReader(bytes.NewReader(l.data), 0, l.n)}
	}
	return packedBlob{io.NewSectionReader(l.r.pack, l.off, l.n)}
}

// verify reads every indexed blob and returns the names whose bytes no longer match the checksum
// their index entry recorded (damage on disk), with what was wrong. A sorted index that does not
// check is removed (it is written again from the .idx).
func (ps *packSet) verify() (map[string]string, error) {
	all, err := ps.all("")
	if err != nil {
		return nil, err
	}
	bad := map[string]string{}
	var buf []byte
	for _, p := range all {
		l := p.loc
		if int64(cap(buf)) < l.n {
			buf = make([]byte, l.n)
		}
		b := buf[:l.n]
		if _, err := l.r.pack.ReadAt(b, l.off); err != nil {
			bad[p.name] = fmt.Sprintf("packed in %s at %d: %v", l.r.id, l.off, err)
		} else if crc32.Checksum(b, crcTable) != p.crc {
			bad[p.name] = fmt.Sprintf("packed in %s at %d: bytes do not match their checksum (damaged on disk)", l.r.id, l.off)
		}
	}
	ps.dropBadSorted()
	return bad, nil
}

// dropBadSorted removes the sorted indexes that do not check and reads their packs' tails from
// the start of the .idx.
func (ps *packSet) dropBadSorted() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, r := range ps.packs {
		if r.sorted == nil || checkSorted(r.sorted) == nil {
			continue
		}
		_ = fsretry.Remove(filepath.Join(ps.dir, r.id+sortedExt))
		r.sorted.f.Close()
		r.sorted, r.tail, r.idxOff = nil, packTail{}, int64(len(idxMagic))
		_ = ps.tail(r)
	}
}
