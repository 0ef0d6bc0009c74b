package client

import (
	"context"
	"os"
	"slices"
	"sync"
	"time"
)

// turns gives the leader's large uploads to one endpoint their turns, one at a time, the oldest
// file first. The versions of a file that one push carries reach the agents together, and git-lfs
// gives each to a different process; uploaded side by side, none would find the others' chunks
// (the shard cache learns of an upload when its shard is registered). In turns, each version is
// chunked after the previous one's shard is registered, so it stores and sends only its changed
// chunks. Oldest first: git-lfs writes a file's object when `git add` cleans it, so the versions of
// a file committed one after the other have increasing modification times, and each is chunked
// after the version it was made from.
//
// Unrelated large files take turns too: one upload at a time already has every core of the
// leader (allCores) and its xorbs in flight (Tuning.Upload).
//
// Safe for concurrent use. The zero value is ready.
type turns struct {
	mu     sync.Mutex
	queues map[*endpoint]*turnQueue
	seq    uint64
}

type turnQueue struct {
	busy    bool
	waiting []*turn
}

type turn struct {
	mtime time.Time
	seq   uint64        // arrival order, between files of the same time
	ready chan struct{} // closed when it is this upload's turn
}

// take waits for the turn of an upload of the file at path to e, and returns the function that
// ends the turn. It fails only when ctx ends first.
func (t *turns) take(ctx context.Context, e *endpoint, path string) (done func(), err error) {
	var mtime time.Time
	if fi, err := os.Stat(path); err == nil {
		mtime = fi.ModTime()
	}
	t.mu.Lock()
	if t.queues == nil {
		t.queues = map[*endpoint]*turnQueue{}
	}
	q := t.queues[e]
	if q == nil {
		q = &turnQueue{}
		t.queues[e] = q
	}
	if !q.busy {
		q.busy = true
		t.mu.Unlock()
		return func() { t.next(q) }, nil
	}
	t.seq++
	me := &turn{mtime: mtime, seq: t.seq, ready: make(chan struct{})}
	q.waiting = append(q.waiting, me)
	t.mu.Unlock()
	select {
	case <-me.ready:
		return func() { t.next(q) }, nil
	case <-ctx.Done():
		t.mu.Lock()
		i := slices.Index(q.waiting, me)
		if i >= 0 {
			q.waiting = slices.Delete(q.waiting, i, i+1)
		}
		t.mu.Unlock()
		if i < 0 { // the turn came as ctx ended: pass it on
			t.next(q)
		}
		return nil, ctx.Err()
	}
}

// next ends the current turn of q and gives the next to the oldest waiting file.
func (t *turns) next(q *turnQueue) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(q.waiting) == 0 {
		q.busy = false
		return
	}
	k := 0
	for i, w := range q.waiting {
		o := q.waiting[k]
		if w.mtime.Before(o.mtime) || (w.mtime.Equal(o.mtime) && w.seq < o.seq) {
			k = i
		}
	}
	w := q.waiting[k]
	q.waiting = append(q.waiting[:k], q.waiting[k+1:]...)
	close(w.ready)
}
