package xetfile

import (
	"crypto/sha256"
	"fmt"
	gohash "hash"
	"sync"
)

// shaTrack checks a file read whole against its SHA-256: it hashes the bytes reads return in file
// order, from the start. A read that lands ahead of the hashed prefix is not hashed then, but the
// prefix catches up through the chunks still in memory once a read reaches it (kernel read-ahead
// sends a stream's reads a little out of order). The read that completes the prefix compares; a
// mismatch fails that read and every later one.
type shaTrack struct {
	mu   sync.Mutex
	h    gohash.Hash
	pos  int64
	done bool
	err  error
	// The plan's check against the Xet hash (plancheck.go): the plan it passed (a plan asked again
	// after an expired URL is checked again), the plan under check, and the first of its terms
	// whose footer was not known at the last try.
	planChecked *plan
	planOf      *plan
	planNext    int
}

func (t *shaTrack) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// tracked adds the bytes p read at off to the file's SHA-256 when they continue its prefix.
func (f *File) tracked(p []byte, off int64) error {
	t := &f.track
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done || t.err != nil {
		return t.err
	}
	if off > t.pos || off+int64(len(p)) <= t.pos {
		return nil
	}
	if t.h == nil {
		t.h = sha256.New()
	}
	t.h.Write(p[t.pos-off:])
	t.pos = off + int64(len(p))
	f.catchUp()
	if t.pos < f.size {
		return nil
	}
	t.done = true
	var sum [32]byte
	t.h.Sum(sum[:0])
	t.h = nil
	if sum != f.sha {
		f.fs.st.shaBad.Add(1)
		t.err = fmt.Errorf("object %s read whole has SHA-256 %x, not its oid: the CAS maps the oid to another file; pushing the right content again repairs it", f.oid, sum)
		return t.err
	}
	f.fs.st.shaOK.Add(1)
	return nil
}

// catchUp hashes on from t.pos through chunks that are in memory (under t.mu; it fetches nothing).
func (f *File) catchUp() {
	t := &f.track
	p, _ := f.plan.peekValue()
	for p != nil && t.pos < f.size {
		tm := p.terms[p.termAt(t.pos)]
		info := f.fs.footers.peek(tm.xorb)
		if info == nil || info.checkTerm(tm) != nil {
			return
		}
		base := info.rawStart(tm.start) - tm.pos
		k := info.chunkAt(tm.start, tm.end, t.pos+base)
		d, ok := f.fs.mem.get(info.hashes[k])
		if !ok || len(d) != info.size(k) { // a footer that lies about a chunk's size: the read fails (chunks)
			return
		}
		cs := info.rawStart(k) - base
		t.h.Write(d[t.pos-cs:])
		t.pos = cs + int64(len(d))
	}
}
