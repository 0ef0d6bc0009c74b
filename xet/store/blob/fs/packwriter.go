package fs

import (
	"crypto/rand"
	"encoding/hex"
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
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/internal/regfile"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// packWriter appends to one pack whose index flock it holds, with group commit: records are
// written as they come, and one fsync makes every record written before it durable, so concurrent
// writers of a process (the server's requests, a shard's registration) share fsyncs.
type packWriter struct {
	set  *packSet
	r    *packReader
	pack *os.File // read-write
	idx  *os.File // read-write; holds the flock

	mu       sync.Mutex // append state
	end      int64      // of the records
	alloc    int64      // of the file: [end, alloc) is zeros written ahead (see grow)
	buf      []byte     // records being written, reused
	queued   []packEntry
	written  uint64            // records written
	inflight map[string]uint64 // name -> its record's sequence number, until durable
	err      error             // sticky: after a failed write or sync the writer takes nothing more

	syncMu sync.Mutex
	idxEnd int64  // syncMu
	synced uint64 // records durable and indexed; syncMu
}

// claimPack returns a writer on an unlocked pack below packMaxBytes, or on a new pack.
func claimPack(set *packSet) (*packWriter, error) {
	if err := mkdirDurable(set.dir, filepath.Dir(set.dir)); err != nil {
		return nil, fmt.Errorf("store: packs: %w", err)
	}
	ents, err := os.ReadDir(set.dir)
	if err != nil {
		return nil, fmt.Errorf("store: packs: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), idxExt); ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		w, err := tryClaim(set, id)
		if err != nil {
			return nil, err
		}
		if w != nil {
			return w, nil
		}
	}
	return newPack(set)
}

// tryClaim locks pack id and recovers it; nil when another writer holds it or it is full.
func tryClaim(set *packSet, id string) (*packWriter, error) {
	r, err := set.reader(id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // removed meanwhile
	}
	if err != nil {
		return nil, err
	}
	set.mu.RLock()
	hint := r.hint()
	set.mu.RUnlock()
	pack, idx, end, idxEnd, err := lockAndRecover(set.dir, id, hint)
	if pack == nil || err != nil {
		return nil, err
	}
	if end >= packMaxBytes {
		pack.Close()
		idx.Close()
		return nil, nil
	}
	return startWriter(set, id, pack, idx, end, idxEnd)
}

func startWriter(set *packSet, id string, pack, idx *os.File, end, idxEnd int64) (*packWriter, error) {
	r, err := set.reader(id)
	if err != nil {
		pack.Close()
		idx.Close()
		return nil, err
	}
	return &packWriter{set: set, r: r, pack: pack, idx: idx, end: end, alloc: end, idxEnd: idxEnd, inflight: map[string]uint64{}}, nil
}

// newPack creates a pack and locks it. The .pack comes first; the index is written and locked under
// a name no one looks for, then renamed into place, so that no other writer can claim the pack
// before this one holds it.
func newPack(set *packSet) (*packWriter, error) {
	var rnd [12]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(rnd[:])
	create := func(name, magic string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(set.dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, fmt.Errorf("store: creating pack: %w", err)
		}
		if _, err := f.Write([]byte(magic)); err != nil {
			f.Close()
			return nil, fmt.Errorf("store: creating pack: %w", err)
		}
		return f, nil
	}
	pack, err := create(id+packExt, packMagic)
	if err != nil {
		return nil, err
	}
	idx, err := create(id+idxExt+".new", idxMagic)
	if err == nil {
		var ok bool
		if ok, err = tryLock(idx); err == nil && !ok {
			err = errors.New("locked by another process")
		}
		if err == nil {
			err = errors.Join(pack.Sync(), idx.Sync())
		}
		if err == nil {
			err = fsretry.Rename(idx.Name(), filepath.Join(set.dir, id+idxExt))
		}
		if err == nil {
			err = syncDir(set.dir, "packs/"+id)
		}
		if err != nil {
			fsretry.Remove(idx.Name())
			idx.Close()
		}
	}
	if err != nil {
		pack.Close()
		fsretry.Remove(pack.Name())
		return nil, fmt.Errorf("store: creating pack %s: %w", id, err)
	}
	return startWriter(set, id, pack, idx, int64(len(packMagic)), int64(len(idxMagic)))
}

// append writes the records of the blobs not marked stored (nor being written by another caller)
// and returns, per blob, whether this call wrote it, and the sequence number to sync up to before
// any of them may be reported. stored is as of the set's generation gen (Backend.existing): when
// the set changed since, a blob another caller published meanwhile is looked for again.
func (w *packWriter) append(blobs []blob.NewBlob, stored []bool, gen uint64) ([]bool, uint64, error) {
	return w.appendRecords(blobs, stored, gen, false)
}

// appendRecords is append; with force it also writes blobs indexed already (gc moving them out of
// a pack it rewrites), but still not a name another caller is writing.
func (w *packWriter) appendRecords(blobs []blob.NewBlob, stored []bool, gen uint64, force bool) ([]bool, uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, 0, w.err
	}
	created := make([]bool, len(blobs))
	buf := w.buf[:0]
	var wait uint64
	var mine []packEntry
	recheck := !force && w.set.gen.Load() != gen
	for i, b := range blobs {
		if seq, ok := w.inflight[b.Name]; ok {
			wait = max(wait, seq)
			continue
		}
		if recheck && !stored[i] {
			_, ok, err := w.set.get(b.Name) // another caller's batch may just have published it
			if err != nil {
				return nil, 0, err
			}
			stored[i] = ok
		}
		if stored[i] && !force {
			continue
		}
		start := int64(len(buf))
		buf = appendRecord(buf, b.Name, b.Data)
		mine = append(mine, packEntry{name: b.Name, off: w.end + start + int64(recHeader+len(b.Name)),
			n: int64(len(b.Data)), crc: crc32.Checksum(b.Data, crcTable)})
		created[i] = true
		w.inflight[b.Name] = w.written + uint64(len(mine))
	}
	if len(mine) == 0 {
		return created, wait, nil
	}
	if cap(buf) <= 4<<20 {
		w.buf = buf // reused: the next append overwrites it under w.mu
	}
	err := w.grow(w.end + int64(len(buf)))
	if err == nil {
		_, err = w.pack.WriteAt(buf, w.end)
	}
	if err != nil {
		w.err = fmt.Errorf("store: writing pack %s: %w", w.r.id, err)
		return nil, 0, w.err
	}
	w.end += int64(len(buf))
	w.written += uint64(len(mine))
	w.queued = append(w.queued, mine...)
	return created, w.written, nil
}

// packGrow is the step in which a writer extends its pack with zeros ahead of its records.
const packGrow = 1 << 20

// grow makes the pack file at least end bytes long, extending it in packGrow steps of written zeros
// (w.mu held). Records then overwrite blocks that exist and leave the file's size alone, so the
// fdatasync of a commit flushes their pages only, not the inode and block allocation an append
// that grows the file would add to every commit. The zeros past the last record are not a record:
// recovery stops there and cuts them (recoverPack), as close does.
func (w *packWriter) grow(end int64) error {
	if end <= w.alloc {
		return nil
	}
	to := (end + packGrow - 1) / packGrow * packGrow
	for w.alloc < to {
		n, err := w.pack.WriteAt(packZeros[:min(int64(len(packZeros)), to-w.alloc)], w.alloc)
		w.alloc += int64(n)
		if err != nil {
			return err
		}
	}
	return nil
}

// packZeros is what grow writes: read only, never allocated per growth.
var packZeros [packGrow]byte

// sync returns once record seq and every one before it is durable and indexed: it fsyncs the pack
// for every record written so far (or finds that another caller's fsync covered seq).
func (w *packWriter) sync(seq uint64) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if w.synced >= seq {
		return nil
	}
	w.mu.Lock()
	target, q, werr := w.written, w.queued, w.err
	w.queued = nil
	w.mu.Unlock()
	if werr != nil {
		return werr
	}
	var buf []byte
	for _, e := range q {
		buf = appendIndexEntry(buf, e)
	}
	err := datasync(w.pack)
	if err == nil {
		_, err = w.idx.WriteAt(buf, w.idxEnd)
	}
	if err != nil {
		w.mu.Lock()
		w.err = fmt.Errorf("store: writing pack %s: %w", w.r.id, err)
		w.mu.Unlock()
		return w.err
	}
	idxStart := w.idxEnd
	w.idxEnd += int64(len(buf))
	w.synced = target
	perr := w.set.publish(w.r, q, idxStart, w.idxEnd)
	w.mu.Lock()
	for _, e := range q {
		delete(w.inflight, e.name)
	}
	w.mu.Unlock()
	return perr
}

// done reports whether the pack has reached packMaxBytes, or failed.
func (w *packWriter) done() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err != nil || w.end >= packMaxBytes
}

// close releases the pack (and its lock), cutting the zeros written ahead of its records. The
// reader side stays open.
func (w *packWriter) close() {
	w.mu.Lock()
	if w.err == nil && w.alloc > w.end {
		_ = cutZeros(w.pack, w.end) // else the next claim or a reader's repair cuts them
	}
	w.mu.Unlock()
	w.pack.Close()
	w.idx.Close()
}

// recoverHint is what a pack's sorted index says of the start of its .idx: the bytes it covers
// (whole entries) and the end of the records they name. Zero: nothing known.
type recoverHint struct{ idxEnd, dataEnd int64 }

// recoverPack brings a locked pack to a consistent state: the index is cut after its last whole
// entry, the records past the last indexed one that are whole and checksummed are indexed (a crash
// or power loss between the pack's fsync and the index write), and the pack is cut after them. It
// reads the index from the end of what h covers, when the index is that long. It returns the ends
// of pack and index.
func recoverPack(id string, pack, idx *os.File, h recoverHint) (end, idxEnd int64, err error) {
	fail := func(err error) (int64, int64, error) {
		return 0, 0, fmt.Errorf("store: recovering pack %s: %w", id, err)
	}
	st, err := idx.Stat()
	if err != nil {
		return fail(err)
	}
	onDisk := st.Size()
	from, end := int64(0), int64(len(packMagic))
	if h.idxEnd > int64(len(idxMagic)) && h.idxEnd <= onDisk {
		from, end = h.idxEnd, max(end, h.dataEnd)
	}
	var missing []byte // of the magic: the index was created, then the process died before writing it
	if from == 0 {
		m := make([]byte, min(onDisk, int64(len(idxMagic))))
		if _, err := idx.ReadAt(m, 0); err != nil {
			return fail(err)
		}
		if !strings.HasPrefix(idxMagic, string(m)) {
			return fail(errors.New("index does not start with " + idxMagic))
		}
		missing, from = []byte(idxMagic[len(m):]), int64(len(idxMagic))
	}
	// The entries are read a piece at a time: the index's length says nothing of what it holds
	// (a power loss leaves a tail of zeros), so it is never read in one allocation of it.
	buf := make([]byte, min(max(onDisk-from, 0), indexPiece))
	good, err := readEntries(idx, id, from, onDisk, buf, func(e packEntry) { end = max(end, e.off+e.n) })
	if err != nil {
		return fail(err)
	}
	found, newEnd, err := scanRecords(pack, end)
	if err != nil {
		return fail(err)
	}
	add := missing // written where the whole entries end (where the magic's bytes on disk end)
	for _, e := range found {
		add = appendIndexEntry(add, e)
	}
	at := good - int64(len(missing))
	if at+int64(len(add)) != onDisk || len(found) > 0 {
		if err := rewriteTail(idx, add, at, 0); err != nil {
			return fail(err)
		}
	}
	if err := cutPack(pack, newEnd); err != nil {
		return fail(err)
	}
	return newEnd, at + int64(len(add)), nil
}

// cutPack cuts pack to end when it is longer (cutZeros), and syncs it.
func cutPack(pack *os.File, end int64) error {
	st, err := pack.Stat()
	if err != nil || st.Size() == end {
		return err
	}
	if err := cutZeros(pack, end); err != nil {
		return err
	}
	return pack.Sync()
}

// cutZeros truncates pack to end, the end of its last whole record, keeping its modification time:
// what is cut (zeros written ahead, or a torn record no one was told about) changes no blob, and
// the time is what gc reads as the age of the blobs in the pack (sweep.go: ListInfo), so a pack of
// trashed blobs must not look newer each time a process cuts its tail.
func cutZeros(pack *os.File, end int64) error {
	st, err := pack.Stat()
	if err != nil {
		return err
	}
	if err := pack.Truncate(end); err != nil {
		return err
	}
	return os.Chtimes(pack.Name(), time.Time{}, st.ModTime())
}

// rewriteTail makes idx hold exactly buf from base on, writing from base+off (what is before is
// unchanged).
func rewriteTail(idx *os.File, buf []byte, base, off int64) error {
	if _, err := idx.WriteAt(buf[off:], base+off); err != nil {
		return err
	}
	if err := idx.Truncate(base + int64(len(buf))); err != nil {
		return err
	}
	return idx.Sync()
}

// scanRecords reads the whole, checksummed records of pack from off on and returns them and the
// end of the last one.
func scanRecords(pack *os.File, off int64) ([]packEntry, int64, error) {
	st, err := pack.Stat()
	if err != nil {
		return nil, 0, err
	}
	if st.Size() < int64(len(packMagic)) {
		if _, err := pack.WriteAt([]byte(packMagic), 0); err != nil {
			return nil, 0, err
		}
		return nil, int64(len(packMagic)), nil
	}
	var out []packEntry
	const window = packMaxBlob + recHeader + blob.MaxNameLen
	buf := make([]byte, window)
	for off < st.Size() {
		n, err := pack.ReadAt(buf, off)
		if err != nil && err != io.EOF {
			return nil, 0, err
		}
		e, total, perr := parseRecord(buf[:n])
		if perr != nil {
			break
		}
		e.off += off
		out = append(out, e)
		off += int64(total)
	}
	return out, off, nil
}

// lockAndRecover locks pack id and recovers it, returning its files open for writing and their
// ends; nil files when another writer holds it or it was removed.
func lockAndRecover(dir, id string, h recoverHint) (pack, idx *os.File, end, idxEnd int64, err error) {
	idx, err = regfile.Open(filepath.Join(dir, id+idxExt), os.O_RDWR)
	if err != nil {
		return nil, nil, 0, 0, nil // removed meanwhile
	}
	ok, err := tryLock(idx)
	if err != nil || !ok {
		idx.Close()
		return nil, nil, 0, 0, err
	}
	pack, err = regfile.Open(filepath.Join(dir, id+packExt), os.O_RDWR)
	if err == nil {
		end, idxEnd, err = recoverPack(id, pack, idx, h)
		if err != nil {
			pack.Close()
		}
	} else {
		err = fmt.Errorf("store: pack %s: %w", id, err)
	}
	if err != nil {
		idx.Close()
		return nil, nil, 0, 0, err
	}
	return pack, idx, end, idxEnd, nil
}
