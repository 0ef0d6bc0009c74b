package leader

import (
	"context"
	"os"
	"slices"
	"sync"
	"time"
)

// turns gives the leader's large transfers to one endpoint their turns. The versions of a file
// that one push carries reach the agents together, and git-lfs gives each to a different process;
// uploaded side by side, none would find the others' chunks (the shard cache learns of an upload
// when its shard is registered). So related uploads — a family: files whose samples (kin.go) share
// a chunk — take turns, one at a time, the oldest file first: each version is chunked after the
// previous one's shard is registered, so it stores and sends only its changed chunks. Oldest
// first: git-lfs writes a file's object when `git add` cleans it, so the versions of a file
// committed one after the other have increasing modification times, and each is chunked after the
// version it was made from. Unrelated files are families of their own and go side by side, as
// before. A family ends when its last member's turn does: a version that comes later finds the
// earlier ones in the shard cache anyway.
//
// Downloads are related by the xorbs their plans name (Leader.DownloadTurn): the versions of a file share
// the xorbs of their unchanged chunks, and one after the other each copies those chunks from the
// one before (recentDownloads, the chunk index) instead of fetching them again; files that share
// no xorb go side by side, in the order they come.
//
// Safe for concurrent use. The zero value is ready.
type turns struct {
	mu       sync.Mutex
	families map[string][]*family // by endpoint
	seq      uint64
}

// family is the transfers to one endpoint that take turns.
type family struct {
	kin     sample // the union of its members' samples (chunks of uploads, xorbs of downloads)
	busy    bool
	waiting []*turn
}

type turn struct {
	mtime time.Time
	seq   uint64        // arrival order, between files of the same time
	ready chan struct{} // closed when it is this transfer's turn
}

// take waits for the turn of a transfer to endpoint e of the file at path ("" for a download:
// arrival order) with sample s, and returns the function that ends the turn. It fails only when
// ctx ends first.
func (t *turns) take(ctx context.Context, e string, path string, s sample) (done func(), err error) {
	var mtime time.Time
	if fi, err := os.Stat(path); path != "" && err == nil {
		mtime = fi.ModTime()
	}
	t.mu.Lock()
	f := t.familyOf(e, s)
	if !f.busy {
		f.busy = true
		t.mu.Unlock()
		return func() { t.next(e, f) }, nil
	}
	t.seq++
	me := &turn{mtime: mtime, seq: t.seq, ready: make(chan struct{})}
	f.waiting = append(f.waiting, me)
	t.mu.Unlock()
	select {
	case <-me.ready:
		return func() { t.next(e, f) }, nil
	case <-ctx.Done():
		t.mu.Lock()
		i := slices.Index(f.waiting, me)
		if i >= 0 {
			f.waiting = slices.Delete(f.waiting, i, i+1)
		}
		t.mu.Unlock()
		if i < 0 { // the turn came as ctx ended: pass it on
			t.next(e, f)
		}
		return nil, ctx.Err()
	}
}

// familyOf returns the family of e that a transfer with sample s joins (made when none is
// related), with s added to its kin. t.mu is held.
func (t *turns) familyOf(e string, s sample) *family {
	if t.families == nil {
		t.families = map[string][]*family{}
	}
	for _, f := range t.families[e] {
		if f.kin.shares(s) {
			for h := range s {
				f.kin[h] = struct{}{}
			}
			return f
		}
	}
	f := &family{kin: sample{}}
	for h := range s {
		f.kin[h] = struct{}{}
	}
	t.families[e] = append(t.families[e], f)
	return f
}

// next ends the current turn of f and gives the next to its oldest waiting file, or ends f.
func (t *turns) next(e string, f *family) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(f.waiting) == 0 {
		f.busy = false
		fs := t.families[e]
		if i := slices.Index(fs, f); i >= 0 {
			t.families[e] = slices.Delete(fs, i, i+1)
		}
		return
	}
	k := 0
	for i, w := range f.waiting {
		o := f.waiting[k]
		if w.mtime.Before(o.mtime) || (w.mtime.Equal(o.mtime) && w.seq < o.seq) {
			k = i
		}
	}
	w := f.waiting[k]
	f.waiting = slices.Delete(f.waiting, k, k+1)
	close(w.ready)
}
