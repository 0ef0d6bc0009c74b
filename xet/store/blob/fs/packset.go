package fs

import (
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

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// packSet is a process's view of the packs under root/packs: every indexed blob's location, kept
// in memory (about 150 bytes a blob) and extended by reading the new tail of each index when a
// lookup misses (another process may have added the blob) and by this process's own writer.
//
// Concurrency: safe for concurrent use.
type packSet struct {
	dir string

	mu       sync.RWMutex
	packs    map[string]*packReader // by id
	entries  map[string]packLoc
	dirMtime time.Time
	listedAt time.Time
	scratch  []byte // tail's read buffer (ps.mu held)

	refreshedAt atomic.Int64 // unix nanos of the last refresh
}

// existsRefreshInterval: a miss of an existence check (before a write, or HasXorb) reads the other
// processes' new index entries at most this often; a miss of a read always does. A stale miss only
// costs a duplicate write of the same content.
const existsRefreshInterval = 100 * time.Millisecond

// lookupForWrite is lookup for an existence check: it may miss a blob another process indexed in
// the last existsRefreshInterval.
func (ps *packSet) lookupForWrite(name string) (bool, error) {
	if _, ok := ps.get(name); ok {
		return true, nil
	}
	if err := ps.refreshIfStale(); err != nil {
		return false, err
	}
	_, ok := ps.get(name)
	return ok, nil
}

// refreshIfStale refreshes when the last refresh is older than existsRefreshInterval.
func (ps *packSet) refreshIfStale() error {
	if time.Now().UnixNano()-ps.refreshedAt.Load() < int64(existsRefreshInterval) {
		return nil
	}
	return ps.refresh()
}

// packReader is one pack open for reading, and how much of its index has been read.
type packReader struct {
	id     string
	pack   *os.File
	idx    *os.File
	idxOff int64
}

type packLoc struct {
	r   *packReader
	off int64
	n   int64
	crc uint32
}

func newPackSet(dir string) *packSet {
	return &packSet{dir: dir, packs: map[string]*packReader{}, entries: map[string]packLoc{}}
}

// get looks name up in what is already indexed.
func (ps *packSet) get(name string) (packLoc, bool) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	l, ok := ps.entries[name]
	return l, ok
}

// lookup looks name up, reading what other processes added when it is not indexed yet.
func (ps *packSet) lookup(name string) (packLoc, bool, error) {
	if l, ok := ps.get(name); ok {
		return l, true, nil
	}
	if err := ps.refresh(); err != nil {
		return packLoc{}, false, err
	}
	l, ok := ps.get(name)
	return l, ok, nil
}

// coarseMtime: a directory listed this long after its last change is known to be listed whole.
const coarseMtime = time.Second

// refresh opens packs created since the last listing and reads the new entries of every index.
func (ps *packSet) refresh() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.refreshedAt.Store(time.Now().UnixNano())
	st, err := os.Stat(ps.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: packs: %w", err)
	}
	if !st.ModTime().Equal(ps.dirMtime) || ps.listedAt.Sub(st.ModTime()) < coarseMtime {
		listed := time.Now()
		if err := ps.openNew(); err != nil {
			return err
		}
		ps.dirMtime, ps.listedAt = st.ModTime(), listed
	}
	for _, r := range ps.packs {
		if err := ps.tail(r); err != nil {
			return err
		}
	}
	return nil
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
	if len(gone) > 0 {
		if err := ps.dropLocked(gone); err != nil {
			return err
		}
	}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), idxExt)
		if !ok || ps.packs[id] != nil {
			continue
		}
		r, err := openPackReader(ps.dir, id)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a writer is creating it: its .pack comes first, so this is a removed pack
		}
		if err != nil {
			return err
		}
		ps.packs[id] = r
	}
	return nil
}

// dropLocked forgets packs gc removed (their blobs were written to other packs first) and indexes
// the remaining packs again from the start, so that every name points at a pack that exists. The
// dropped packs' files are closed a minute later, after reads in flight. ps.mu is held.
func (ps *packSet) dropLocked(ids []string) error {
	var old []*packReader
	for _, id := range ids {
		if r := ps.packs[id]; r != nil {
			old = append(old, r)
			delete(ps.packs, id)
		}
	}
	ps.entries = make(map[string]packLoc, len(ps.entries))
	for _, r := range ps.packs {
		r.idxOff = int64(len(idxMagic))
		if err := ps.tail(r); err != nil {
			return err
		}
	}
	time.AfterFunc(time.Minute, func() {
		for _, r := range old {
			r.pack.Close()
			r.idx.Close()
		}
	})
	return nil
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

func openPackReader(dir, id string) (*packReader, error) {
	if err := repairIfIdle(dir, id); err != nil {
		return nil, err
	}
	return openPackFiles(dir, id)
}

// openPackFiles opens pack id's two files for reading, its index to be read from the start.
func openPackFiles(dir, id string) (*packReader, error) {
	pack, err := os.Open(filepath.Join(dir, id+packExt))
	if err != nil {
		return nil, fmt.Errorf("store: opening pack %s: %w", id, err)
	}
	idx, err := os.Open(filepath.Join(dir, id+idxExt))
	if err != nil {
		pack.Close()
		return nil, fmt.Errorf("store: opening pack %s: %w", id, err)
	}
	return &packReader{id: id, pack: pack, idx: idx, idxOff: int64(len(idxMagic))}, nil
}

// tail reads the index entries added to r since the last read. ps.mu is held.
func (ps *packSet) tail(r *packReader) error {
	st, err := r.idx.Stat()
	if err != nil {
		return fmt.Errorf("store: pack %s: %w", r.id, err)
	}
	if st.Size() <= r.idxOff {
		return nil
	}
	need := int(st.Size() - r.idxOff)
	if cap(ps.scratch) < need {
		ps.scratch = make([]byte, need)
	}
	buf := ps.scratch[:need]
	defer func() {
		if cap(ps.scratch) > 4<<20 { // a first read of a large index: not kept
			ps.scratch = nil
		}
	}()
	n, err := r.idx.ReadAt(buf, r.idxOff)
	if err != nil && err != io.EOF {
		return fmt.Errorf("store: reading pack index %s: %w", r.id, err)
	}
	es, used := parseIndex(buf[:n])
	ps.addLocked(r, es)
	r.idxOff += int64(used)
	return nil
}

func (ps *packSet) addLocked(r *packReader, es []packEntry) {
	for _, e := range es {
		if _, ok := ps.entries[e.name]; !ok {
			ps.entries[e.name] = packLoc{r: r, off: e.off, n: e.n, crc: e.crc}
		}
	}
}

// publish indexes the entries this process's writer just made durable and wrote to r's index,
// which now ends at idxEnd.
func (ps *packSet) publish(r *packReader, es []packEntry, idxEnd int64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.packs[r.id] == nil {
		ps.packs[r.id] = r
	}
	ps.addLocked(r, es)
	if idxEnd > r.idxOff {
		r.idxOff = idxEnd
	}
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
	ps.packs[id] = r
	return r, nil
}

// list returns the indexed names under prefix, sorted.
func (ps *packSet) list(prefix string) []string {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	var out []string
	for name := range ps.entries {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
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

func (l packLoc) blob() blob.Blob { return packedBlob{io.NewSectionReader(l.r.pack, l.off, l.n)} }

// verify reads every indexed blob and returns the names whose bytes no longer match the checksum
// their index entry recorded (damage on disk), with what was wrong.
func (ps *packSet) verify() (map[string]string, error) {
	if err := ps.refresh(); err != nil {
		return nil, err
	}
	ps.mu.RLock()
	locs := make(map[string]packLoc, len(ps.entries))
	for name, l := range ps.entries {
		locs[name] = l
	}
	ps.mu.RUnlock()
	bad := map[string]string{}
	var buf []byte
	for name, l := range locs {
		if int64(cap(buf)) < l.n {
			buf = make([]byte, l.n)
		}
		b := buf[:l.n]
		if _, err := l.r.pack.ReadAt(b, l.off); err != nil {
			bad[name] = fmt.Sprintf("packed in %s at %d: %v", l.r.id, l.off, err)
		} else if crc32.Checksum(b, crcTable) != l.crc {
			bad[name] = fmt.Sprintf("packed in %s at %d: bytes do not match their checksum (damaged on disk)", l.r.id, l.off)
		}
	}
	return bad, nil
}
