package webui

import (
	"context"
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// memo keeps the usage read for each repository (and owner) and when, with the repository's entry
// count at the time: a read is reused while the count is the same (entries are only ever added, so
// any registration or upload changes it) and for at most ttl (gc changes what is kept without
// adding an entry). The pages that find no usable value share one read, and at most `reads` run at
// once: a read goes through every entry of a repository, and a viewer reloading pages must not
// start one per request.
type memo struct {
	mu    sync.Mutex
	m     map[string]*memoEntry
	ttl   time.Duration
	slots chan struct{}
}

type memoEntry struct {
	u       store.Usage
	entries int           // the repository's entry count the read saw; -1: not kept (owners)
	at      time.Time     // zero: none yet
	reading chan struct{} // a read in flight, closed when it ends
}

func newMemo(ttl time.Duration, reads int) *memo {
	return &memo{m: map[string]*memoEntry{}, ttl: ttl, slots: make(chan struct{}, reads)}
}

// usage returns key's usage, read by read unless the last read is still good for entries.
func (m *memo) usage(ctx context.Context, key string, entries int, read func(context.Context) (store.Usage, error)) (store.Usage, error) {
	m.mu.Lock()
	for {
		e := m.m[key]
		if e == nil {
			e = &memoEntry{}
			m.m[key] = e
		}
		if e.reading == nil && !e.at.IsZero() && e.entries == entries && time.Since(e.at) < m.ttl {
			u := e.u
			m.mu.Unlock()
			return u, nil
		}
		if e.reading == nil {
			return m.read(ctx, e, entries, read) // unlocks
		}
		ch := e.reading
		m.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return store.Usage{}, ctx.Err()
		}
		m.mu.Lock()
	}
}

// read runs read for e in a slot. Called under m.mu, which it releases.
func (m *memo) read(ctx context.Context, e *memoEntry, entries int, read func(context.Context) (store.Usage, error)) (store.Usage, error) {
	ch := make(chan struct{})
	e.reading = ch
	m.mu.Unlock()
	u, err := m.inSlot(ctx, read)
	m.mu.Lock()
	defer m.mu.Unlock()
	e.reading = nil
	close(ch)
	if err != nil {
		return store.Usage{}, err // the waiters try a read of their own
	}
	e.u, e.entries, e.at = u, entries, time.Now()
	return u, nil
}

func (m *memo) inSlot(ctx context.Context, read func(context.Context) (store.Usage, error)) (store.Usage, error) {
	select {
	case m.slots <- struct{}{}:
	case <-ctx.Done():
		return store.Usage{}, ctx.Err()
	}
	defer func() { <-m.slots }()
	return read(ctx)
}
