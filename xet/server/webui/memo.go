package webui

import (
	"context"
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/lazy"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// memo keeps the usage read for each repository (and owner) and when, with the repository's entry
// count at the time: a read is reused while the count is the same (entries are only ever added, so
// any registration or upload changes it) and for at most ttl (gc changes what is kept without
// adding an entry). The pages that find no usable value share one read (internal/lazy: a failed
// read is not kept), and at most `reads` run at once: a read goes through every entry of a
// repository, and a viewer reloading pages must not start one per request.
type memo struct {
	mu    sync.Mutex
	m     map[string]*lazy.Value[memoEntry]
	ttl   time.Duration
	slots chan struct{}
}

type memoEntry struct {
	u       store.Usage
	entries int       // the repository's entry count the read saw; -1: not kept (owners)
	at      time.Time // of the read
}

func newMemo(ttl time.Duration, reads int) *memo {
	return &memo{m: map[string]*lazy.Value[memoEntry]{}, ttl: ttl, slots: make(chan struct{}, reads)}
}

// usage returns key's usage, read by read unless the last read is still good for entries.
func (m *memo) usage(ctx context.Context, key string, entries int, read func(context.Context) (store.Usage, error)) (store.Usage, error) {
	v := m.value(key)
	stale := func(e memoEntry) bool { return e.entries != entries || time.Since(e.at) >= m.ttl }
	for {
		v.Drop(stale)
		e, err := v.Get(ctx, func(ctx context.Context) (memoEntry, error) {
			u, err := m.inSlot(ctx, read)
			return memoEntry{u: u, entries: entries, at: time.Now()}, err
		})
		if err != nil || e.entries == entries {
			return e.u, err
		}
		// A read another page started for another entry count: read again for this one.
	}
}

// value is key's value, made on first use.
func (m *memo) value(key string) *lazy.Value[memoEntry] {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.m[key]
	if v == nil {
		v = &lazy.Value[memoEntry]{}
		m.m[key] = v
	}
	return v
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
