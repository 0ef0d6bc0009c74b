// Package chunkcache is the mount's cache on disk: the chunks it fetched (their raw bytes, by chunk
// hash) and the xorb footers it read (by xorb hash), for every mount and every revision of one
// repository, so that a chunk two versions of a file share is fetched once.
//
//	<dir>/segments/<name>.seg   entries' bytes, appended one after the other by one process
//	<dir>/segments/<name>.idx   where each entry of <name>.seg lies (indexEntry, appended after its bytes)
//	<dir>/lock                  the flock of the accounting; its first 8 bytes: the bytes in use
//
// Entries go into segment files, not a file each: creating a file costs far more than appending
// 64 KiB (a millisecond of CPU on some file systems, 60 s for the chunks of 4 GiB). Each process
// appends to a segment of its own and reads every process's index files; an entry is listed only
// after its bytes are written, so a reader never finds a hole.
//
// Nothing in it is trusted: the reader hashes every chunk it gets from here and checks every footer
// against its xorb hash, and Drops an entry that does not verify.
//
// Bounded: every entry is accounted and written under the lock, and when its bytes would pass the
// limit the least recently used segments (by modification time: written
// to, or read once more than TouchAge after it was last noted) are removed first, down to the
// low-water mark. Several processes share the directory; a segment removed while another process
// reads it is read to its end (the file stays until closed) or missed.
package chunkcache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Kind is what an entry holds.
type Kind uint8

const (
	Chunk  Kind = iota // a chunk's raw bytes, named by its chunk hash
	Footer             // a xorb's footer, named by the xorb hash
)

// MaxEntry is the largest entry kept (a chunk is at most 128 KiB, a footer about 330 KB).
const MaxEntry = 1 << 20

// maxSegBytes: a segment is closed for writing at this size or less (Options.Limit/16), so none
// holds entries past it and the entry that took it there.
const maxSegBytes = 64 << 20

// MinLimit is the least bound: room for the chunks of a few reads in flight.
const MinLimit = 16 << 20

// TouchAge: a segment read longer than this after its modification time gets the current time, so
// the least recently used go first.
const TouchAge = time.Minute

// refreshEvery: a lookup that misses reads the other processes' new index entries at most this
// often.
const refreshEvery = 100 * time.Millisecond

// ErrMiss: the cache does not hold the entry.
var ErrMiss = errors.New("chunkcache: not cached")

// Options configure a Cache.
type Options struct {
	Limit int64 // the most bytes the cache keeps (at least MinLimit)
	Log   zerolog.Logger
}

// Stats count what a Cache did in this process.
type Stats struct {
	Hits, Misses, Puts, Evicted, Scans int64
}

// key names an entry.
type key struct {
	kind Kind
	h    hash.Hash
}

// loc is where an entry lies.
type loc struct {
	seg *segment
	off int64
	n   int32
}

// Cache is the cache in one directory. Safe for concurrent use, and for several processes at once.
type Cache struct {
	dir, segDir string
	limit, low  int64
	segBytes    int64 // a segment is closed for writing at this size
	log         zerolog.Logger
	lock        *fileLock

	mu        sync.Mutex
	index     map[key]loc
	segs      map[string]*segment // by name
	refreshed time.Time
	w         *segment // the segment this process appends to (nil: none yet)
	wmu       sync.Mutex

	hits, misses, puts, evicted, scans atomic.Int64
}

// Open opens (creating) the cache in dir, bounded by o.Limit.
func Open(dir string, o Options) (*Cache, error) {
	if o.Limit < MinLimit {
		return nil, fmt.Errorf("chunk cache %s: a limit of %d bytes is below the least, %d", dir, o.Limit, MinLimit)
	}
	segDir := filepath.Join(dir, "segments")
	if err := os.MkdirAll(segDir, 0o755); err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	l, err := openLock(filepath.Join(dir, "lock"))
	if err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	c := &Cache{dir: dir, segDir: segDir, limit: o.Limit, low: o.Limit - max(o.Limit/16, 4<<20), log: o.Log, lock: l,
		segBytes: min(max(o.Limit/16, 1<<20), maxSegBytes), index: map[key]loc{}, segs: map[string]*segment{}}
	c.mu.Lock()
	c.refreshLocked()
	c.mu.Unlock()
	return c, nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Limit is the bound of the cache in bytes.
func (c *Cache) Limit() int64 { return c.limit }

// Close closes the segments and the lock file.
func (c *Cache) Close() error {
	c.wmu.Lock()
	c.mu.Lock()
	for _, s := range c.segs {
		s.close()
	}
	c.segs, c.index, c.w = map[string]*segment{}, map[key]loc{}, nil
	c.mu.Unlock()
	c.wmu.Unlock()
	return c.lock.close()
}

// Stats returns what this process's Cache did.
func (c *Cache) Stats() Stats {
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Puts: c.puts.Load(), Evicted: c.evicted.Load(), Scans: c.scans.Load()}
}

// lookup finds entry k, reading the other processes' new entries first when it is not known.
func (c *Cache) lookup(k key) (loc, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.index[k]
	if !ok && time.Since(c.refreshed) >= refreshEvery {
		c.refreshLocked()
		l, ok = c.index[k]
	}
	return l, ok
}

// Get returns the bytes of entry h of kind k, or ErrMiss. The caller verifies them (and Drops the
// entry when they do not).
func (c *Cache) Get(k Kind, h hash.Hash) ([]byte, error) {
	l, ok := c.lookup(key{k, h})
	if !ok {
		c.misses.Add(1)
		return nil, ErrMiss
	}
	b := make([]byte, l.n)
	if err := l.seg.readAt(b, l.off); err != nil {
		c.forget(l.seg) // removed by another process's eviction
		c.misses.Add(1)
		return nil, ErrMiss
	}
	l.seg.touch()
	c.hits.Add(1)
	return b, nil
}

// Has reports whether entry h of kind k is listed (not whether it verifies).
func (c *Cache) Has(k Kind, h hash.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.index[key{k, h}]
	return ok
}

// Drop forgets entry h of kind k (it did not verify); its bytes go with their segment.
func (c *Cache) Drop(k Kind, h hash.Hash) {
	c.mu.Lock()
	delete(c.index, key{k, h})
	c.mu.Unlock()
}

// Put stores data as entry h of kind k (nothing when it is listed already), making room first.
// The room is made and the entry written under the accounting lock: an eviction counts the cache
// by a scan, which would miss an entry accounted but not yet written.
func (c *Cache) Put(k Kind, h hash.Hash, data []byte) error {
	if len(data) > MaxEntry {
		return fmt.Errorf("chunk cache: an entry of %d bytes is over the most, %d", len(data), MaxEntry)
	}
	if c.Has(k, h) {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var putErr error
	err := c.lock.with(func(used int64, known bool) (int64, error) {
		used, putErr = c.addLocked(key{k, h}, data, used, known)
		return used, nil
	})
	if err == nil {
		err = putErr
	}
	if err == nil {
		c.puts.Add(1)
	}
	return err
}
