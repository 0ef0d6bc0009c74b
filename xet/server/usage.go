package server

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// UsageStore is what quotas need of the store (*store.Store).
type UsageStore interface {
	// RepoStoredBytes is a repository's usage (store.Usage's Stored).
	RepoStoredBytes(ctx context.Context, ns string) (uint64, error)
	// OwnerStoredBytes is what the repositories of owner (store.Owner) take together.
	OwnerStoredBytes(ctx context.Context, owner string) (uint64, error)
	// ShardAdds bounds what registering an upload shard as a adds to a's repository's usage, and
	// what its largest file adds alone; a shard registration would refuse gets that refusal.
	ShardAdds(ctx context.Context, a store.Access, body []byte) (adds, largest uint64, err error)
}

// usageCache keeps each repository's and owner's usage for usageTTL, adding what uploads store
// meanwhile (add): reading a usage reads all the repository's entries, too much to do for every
// upload; another instance's uploads are seen within usageTTL. The gets that find no fresh value
// share one read of the store, and what is added while that read runs is kept on top of its
// answer (the read may or may not have seen it: counting it twice for a while errs on the side of
// the quota). It also holds, per key, the bytes of uploads still arriving (reserve), so that
// uploads running at once are checked together.
type usageCache struct {
	mu    sync.Mutex
	m     map[string]*usageEntry // by repository, and by "user:" + owner
	store UsageStore
}

type usageEntry struct {
	bytes    uint64        // the last read's answer plus what was added since
	at       time.Time     // of the last read; zero: none yet
	reading  chan struct{} // a read in flight, closed when it ends; nil: none
	added    uint64        // added since the read in flight began
	arriving int64         // reserved by uploads still arriving
}

const usageTTL = time.Minute

func newUsageCache(us UsageStore) *usageCache {
	return &usageCache{m: map[string]*usageEntry{}, store: us}
}

// entry returns key's entry, making it. Under c.mu.
func (c *usageCache) entry(key string) *usageEntry {
	e := c.m[key]
	if e == nil {
		e = &usageEntry{}
		c.m[key] = e
	}
	return e
}

// get returns key's usage (a repository, or "user:" + an owner) and the bytes of its uploads
// still arriving.
func (c *usageCache) get(ctx context.Context, key string) (used uint64, arriving int64, err error) {
	c.mu.Lock()
	for {
		e := c.entry(key)
		switch {
		case e.reading == nil && !e.at.IsZero() && time.Since(e.at) < usageTTL:
			used, arriving = e.bytes, e.arriving
			c.mu.Unlock()
			return used, arriving, nil
		case e.reading != nil: // another get reads it: wait for its answer
			ch := e.reading
			c.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			}
			c.mu.Lock()
			continue
		}
		return c.read(ctx, key, e) // unlocks
	}
}

// read reads key's usage from the store into e. Called under c.mu, which it releases.
func (c *usageCache) read(ctx context.Context, key string, e *usageEntry) (uint64, int64, error) {
	ch := make(chan struct{})
	e.reading, e.added = ch, 0
	c.mu.Unlock()
	var b uint64
	var err error
	if owner, ok := strings.CutPrefix(key, "user:"); ok {
		b, err = c.store.OwnerStoredBytes(ctx, owner)
	} else {
		b, err = c.store.RepoStoredBytes(ctx, key)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e.reading = nil
	close(ch)
	if err != nil {
		return 0, 0, err // the waiters try a read of their own
	}
	e.bytes, e.at = b+e.added, time.Now()
	return e.bytes, e.arriving, nil
}

// add counts n bytes just stored under keys until their usage is read again. Safe on a nil cache.
func (c *usageCache) add(keys []string, n uint64) {
	if c == nil || n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		e := c.m[k]
		if e == nil {
			continue // no read yet: the first one finds the bytes in the store
		}
		e.bytes += n
		if e.reading != nil {
			e.added += n
		}
	}
}

// reserve counts n more bytes of an upload still arriving under every key of checks, unless one
// of them would pass its limit with them: then nothing is reserved and that check is returned.
func (c *usageCache) reserve(checks []quotaCheck, n int64) *quotaCheck {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range checks {
		e := c.entry(checks[i].key)
		if checks[i].limit > 0 && int64(e.bytes)+e.arriving+n > checks[i].limit {
			checks[i].used, checks[i].arriving = e.bytes, e.arriving
			return &checks[i]
		}
	}
	for _, q := range checks {
		c.entry(q.key).arriving += n
	}
	return nil
}

// unreserve gives back n bytes reserve counted under the keys of checks.
func (c *usageCache) unreserve(checks []quotaCheck, n int64) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range checks {
		c.entry(q.key).arriving -= n
	}
}
