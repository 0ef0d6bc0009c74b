package xetfile

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	gohash "hash"
	"slices"
	"sync"
)

// shaTrack checks a file read whole against its SHA-256: it hashes the bytes reads return in file
// order, from the start. A read that lands ahead of the hashed prefix is not hashed then, but the
// prefix catches up through the chunks still in memory once a read reaches it (kernel read-ahead
// sends a stream's reads a little out of order). When the rest of the file from the prefix on was
// all returned by reads before and memory no longer holds it (a tail read first, as footer-first
// formats do, of a file larger than the memory cache), no read will bring it again: the prefix is
// finished in the background (finishSHA), reading again only what reads returned, instead of
// stopping there unchecked. A file not read whole costs nothing more. The read that completes the
// prefix compares; a mismatch fails that read and every later one.
type shaTrack struct {
	mu        sync.Mutex
	h         gohash.Hash
	pos       int64
	done      bool
	err       error
	ahead     []byteRun // bytes reads returned beyond pos: sorted, merged, at most maxAhead runs
	finishing bool      // finishSHA runs
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
	if off > t.pos {
		t.noteAhead(byteRun{off, off + int64(len(p))})
		return nil
	}
	if off+int64(len(p)) <= t.pos {
		return nil
	}
	if t.h == nil {
		t.h = sha256.New()
	}
	t.h.Write(p[t.pos-off:])
	t.pos = off + int64(len(p))
	f.catchUp()
	if t.pos < f.size {
		if !t.finishing && t.returnedToEnd(f.size) {
			t.finishing = f.fs.goBackground(f.finishSHA)
		}
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

// byteRun is bytes [off, end) of a file.
type byteRun struct{ off, end int64 }

// maxAhead bounds the runs a file remembers reads returned ahead of its prefix (adjacent ones are
// merged). Past it the run furthest on is forgotten: the rest of the file then never counts as
// returned, and the prefix is finished only by reads, as without this.
const maxAhead = 32

// noteAhead remembers that a read returned s, ahead of the prefix (under t.mu).
func (t *shaTrack) noteAhead(s byteRun) {
	i, _ := slices.BinarySearchFunc(t.ahead, s.off, func(r byteRun, off int64) int { return cmp.Compare(r.off, off) })
	t.ahead = slices.Insert(t.ahead, i, s)
	merged := t.ahead[:1]
	for _, r := range t.ahead[1:] {
		if last := &merged[len(merged)-1]; r.off <= last.end {
			last.end = max(last.end, r.end)
			continue
		}
		merged = append(merged, r)
	}
	t.ahead = merged[:min(len(merged), maxAhead)]
}

// returnedToEnd reports whether reads returned every byte from the prefix to size before (under
// t.mu); runs wholly behind the prefix are forgotten.
func (t *shaTrack) returnedToEnd(size int64) bool {
	t.ahead = slices.DeleteFunc(t.ahead, func(r byteRun) bool { return r.end <= t.pos })
	at := t.pos
	for _, r := range t.ahead {
		if r.off > at {
			return false
		}
		at = max(at, r.end)
	}
	return at >= size
}

// finishSHABytes is what finishSHA reads at a time; maxFinishers, how many finishers of a mount
// read at once (each holds a buffer of finishSHABytes): the others wait for a turn.
const (
	finishSHABytes = 4 << 20
	maxFinishers   = 2
)

// finishSHA reads the file on from its hashed prefix until the prefix is complete (and compared),
// the file failed, a read fails, or ctx (the mount's) ends: the bytes reads returned before and
// memory lost, which no read will bring again. Each read is the mount's own, verified as any.
func (f *File) finishSHA(ctx context.Context) {
	t := &f.track
	defer func() {
		t.mu.Lock()
		t.finishing = false
		t.mu.Unlock()
	}()
	fs := f.fs
	fs.finishStarted.Add(1)
	select {
	case fs.finishers <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-fs.finishers }()
	held := fs.finishHolding.Add(1)
	defer fs.finishHolding.Add(-1)
	for peak := fs.finishPeak.Load(); held > peak && !fs.finishPeak.CompareAndSwap(peak, held); peak = fs.finishPeak.Load() {
	}
	var buf []byte
	for {
		t.mu.Lock()
		pos, over := t.pos, t.done || t.err != nil
		t.mu.Unlock()
		if over || pos >= f.size || ctx.Err() != nil {
			return
		}
		if buf == nil {
			buf = make([]byte, min(finishSHABytes, f.size-pos))
		}
		n := min(int64(len(buf)), f.size-pos)
		if _, err := f.ReadAt(ctx, buf[:n], pos); err != nil {
			fs.cfg.Log.Debug().Err(err).Str("oid", f.oid).Msg("mount: finishing the SHA-256 of a file read whole")
			return
		}
		t.mu.Lock()
		stuck := t.pos <= pos
		t.mu.Unlock()
		if stuck {
			return
		}
	}
}
