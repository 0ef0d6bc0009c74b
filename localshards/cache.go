// Package localshards is the client's on-disk shard cache: the shards of earlier uploads and the
// global-dedupe answers of the CAS, kept per CAS endpoint, and an in-memory chunk index over them.
// It is what lets the second push of a changed model upload only the changed chunks without asking
// the network, and what the 8 agent processes git-lfs starts share with each other.
//
// Layout (xet-core's): <root>/<endpoint folder>/shard-cache/<hash>.mdb, hash = hash.Chunk(file bytes);
// beside them our own singles files, <hash>.singles, the one-chunk xorbs of merged small uploads in
// 40 bytes each (singles.go; xet-core ignores the name). Files are written to .<random>.mdb_temp and
// renamed, so a reader never sees half a file. Our own
// shards are kept three weeks; dedupe answers until the server's expiry (footer ExpiresAt; 0 or past
// means expired); expired shards are ignored and deleted a week after expiry; a soft size limit prunes
// the oldest (footer CreatedAt) first when the index is first loaded. Malformed files are renamed to
// <name>.corrupt with a warning and never answer a lookup.
//
// Several processes may use one directory at once. Each keeps its own index and picks up the shards
// the others add (the directory is re-listed on a lookup miss when it changed, at most every
// Options.RefreshInterval).
//
// The index (index.go) is a bucketed slot table of 64-bit truncated chunk hashes and 32-bit refs,
// about 15 bytes per chunk, behind a split-block Bloom filter of 1 byte per chunk (filter.go) that
// stops most misses before the table; a lookup costs about one memory access, and every key match
// is verified against the full hash in the shard file before it is returned, so no damaged or stale
// input can produce a wrong answer. The first load reads only the xorb sections (scan.go) and builds the table; it is
// then persisted as shard-cache/chunk-index.v1 (snapshot.go), which later processes load in one read
// and reconcile with the directory listing.
package localshards

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
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// OwnShardLifetime is how long our own uploads' shards are kept (xet-core's
// MDB_SHARD_LOCAL_CACHE_EXPIRATION).
const OwnShardLifetime = 21 * 24 * time.Hour

// ExpiredGrace is how long an expired shard stays on disk before it is deleted
// (MDB_SHARD_EXPIRATION_BUFFER).
const ExpiredGrace = 7 * 24 * time.Hour

// DefaultRefreshInterval is the default of Options.RefreshInterval.
const DefaultRefreshInterval = 100 * time.Millisecond

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("localshards: cache is closed")

// Options configure a Cache.
type Options struct {
	// SizeLimit is the soft size limit in bytes. 0: DefaultSizeLimit (16 GB). Negative: no limit.
	SizeLimit int64
	// Now is the clock for expiry and creation times (tests inject one). nil: time.Now.
	Now func() time.Time
	// Log receives warnings (corrupt files set aside) and debug messages.
	Log zerolog.Logger
	// RefreshInterval is the shortest time between two checks of the directory for shards other
	// processes added, made on a lookup miss. 0: DefaultRefreshInterval. Negative: never (Refresh
	// still works).
	RefreshInterval time.Duration
	// Workers is the number of goroutines reading shards on the first load. 0: 2.
	Workers int
	// MergeOwnBytes, when positive, merges the shards of small uploads (AddOwn of a shard under a
	// 64th of it) in memory and writes them as one shard file once they reach this many bytes, on
	// Flush and on Close; lookups in this process see them at once. 0: every AddOwn writes its own
	// file (other processes see it at their next refresh).
	MergeOwnBytes int64
	// MaxEntries caps the chunk entries the first load indexes (newest shards first), bounding
	// the index's memory (about 16 bytes each). 0: $HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE, else
	// DefaultMaxEntries. Shards added while running are always indexed.
	MaxEntries int64
}

// DefaultMaxEntries is the default of Options.MaxEntries (xet-core's 64 Mi chunk index cap), about
// 1 GB of index.
const DefaultMaxEntries = 64 << 20

// Cache is one endpoint's shard cache. All methods are safe for concurrent use. Lookups never block
// each other or on Add/refresh: they read an immutable snapshot of the index (view) that writers
// replace atomically; writers (Add*, refresh, first load) serialise on mu.
type Cache struct {
	dir  string // the shard-cache directory
	opts Options
	log  zerolog.Logger
	now  func() time.Time

	view   atomic.Pointer[view]
	closed atomic.Bool
	stale  atomic.Bool // Forget was called: this process's index lists xorbs the CAS lacks

	mu           sync.Mutex       // writers: first load, Add*, refresh
	known        map[string]int32 // file name -> shard index, or -1 (expired, corrupt, skipped)
	nextRef      uint64           // next free ref
	dirMtime     time.Time        // shard-cache dir mtime at the last listing
	listedAt     time.Time        // when it was listed
	fromSnapshot bool             // the first load used the index snapshot

	nextCheck atomic.Int64 // unix nanos before which a miss does not look for new shards
	chunks    chunkCache
	own       ownBuffer      // merged small own shards not yet written (Options.MergeOwnBytes)
	bg        sync.WaitGroup // snapshot writer
}

// view is an immutable snapshot of the index. Its slices may share backing arrays with newer views
// (writers only append beyond this view's lengths).
type view struct {
	segs    []*segment // segs[0] is the big one built at load; later ones are small additions
	small   int        // entries in segs[1:]
	xorbs   []xorbInfo // ascending base
	shards  []*shardInfo
	keys    []hash.Hash // distinct HMAC keys; keys[0] is the zero key (not keyed)
	hashers []*keyedHasher
}

// shardInfo is one indexed shard file.
type shardInfo struct {
	name    string
	size    int64
	created uint64
	expires uint64
	keyID   int
	dead    atomic.Bool // removed or found corrupt since it was indexed
}

// Open returns the cache of the endpoint directory dir (see EndpointDir); shards live in
// dir/shard-cache, created if missing. Open is cheap: the index is loaded (and the directory pruned)
// on the first Lookup or an explicit Load.
func Open(dir string, o Options) (*Cache, error) {
	sd := filepath.Join(dir, ShardCacheSubdir)
	if err := os.MkdirAll(sd, 0o755); err != nil {
		return nil, fmt.Errorf("shard cache: %w", err)
	}
	if o.SizeLimit == 0 {
		o.SizeLimit = DefaultSizeLimit
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	c := &Cache{dir: sd, opts: o, log: o.Log.With().Str("component", "localshards").Logger(), now: o.Now}
	if c.now == nil {
		c.now = time.Now
	}
	c.chunks.init(chunkCacheEntries)
	return c, nil
}

// Dir returns the directory holding the shard files.
func (c *Cache) Dir() string { return c.dir }

// Close writes the buffered small shards (Flush), then drops the in-memory index. Files stay. Later
// calls fail with ErrClosed.
func (c *Cache) Close() error {
	ferr := c.Flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed.Store(true)
	c.view.Store(nil)
	c.chunks.reset()
	c.bg.Wait()
	return ferr
}

// Entries returns the number of chunk entries in the index (0 before it is loaded).
func (c *Cache) Entries() int {
	v := c.view.Load()
	if v == nil {
		return 0
	}
	n := 0
	for _, s := range v.segs {
		n += s.len()
	}
	return n
}

// Lookup returns where chunk (an ordinary, unkeyed chunk hash) lives, searching our own shards and
// keyed dedupe answers. ok is false when no unexpired cached shard holds it. The first call loads
// the index. A miss may re-list the directory for shards other processes added. err is only for
// I/O failures other than a missing or malformed file (those are skipped).
func (c *Cache) Lookup(chunk hash.Hash) (shard.Match, bool, error) {
	if c.stale.Load() {
		return shard.Match{}, false, nil // after Forget this process's index is not trusted
	}
	v, err := c.ready()
	if err != nil {
		return shard.Match{}, false, err
	}
	m, ok, err := c.find(v, chunk)
	if ok || err != nil {
		return m, ok, err
	}
	if m, ok := c.own.lookup(chunk); ok {
		return m, true, nil
	}
	if nv := c.refreshOnMiss(v); nv != nil {
		return c.find(nv, chunk)
	}
	return shard.Match{}, false, nil
}

// refreshOnMiss re-lists the directory after a miss when Options.RefreshInterval has passed since
// the last check and no other goroutine holds the writer lock. It returns the new view when shards
// were added, else nil.
func (c *Cache) refreshOnMiss(v *view) *view {
	if c.opts.RefreshInterval < 0 {
		return nil
	}
	now := time.Now().UnixNano()
	if now < c.nextCheck.Load() {
		return nil
	}
	if !c.mu.TryLock() { // another goroutine is loading, adding or refreshing
		return nil
	}
	c.nextCheck.Store(now + int64(c.opts.RefreshInterval))
	nv, err := c.refreshLocked()
	c.mu.Unlock()
	if err != nil {
		c.log.Debug().Err(err).Msg("shard cache refresh failed")
		return nil
	}
	if nv == v {
		return nil
	}
	return nv
}

// find probes every segment for chunk, unkeyed and under each HMAC key.
func (c *Cache) find(v *view, chunk hash.Hash) (shard.Match, bool, error) {
	for ki := range v.keys {
		probe := chunk
		if ki > 0 {
			probe = v.hashers[ki].sum(chunk)
		}
		key := probe.Truncate()
		for _, s := range v.segs {
			for i := s.candidates(key, 0); i >= 0; i = s.candidates(key, i+1) {
				m, ok, err := c.verify(v, s.refs[i], ki, probe)
				if ok || err != nil {
					return m, ok, err
				}
			}
		}
	}
	return shard.Match{}, false, nil
}

// verify resolves ref and checks the full (keyed) hash against the shard file's chunk entry.
func (c *Cache) verify(v *view, ref uint32, keyID int, probe hash.Hash) (shard.Match, bool, error) {
	xi, ok := v.xorbOf(ref)
	if !ok {
		return shard.Match{}, false, nil
	}
	x := &v.xorbs[xi]
	sh := v.shards[x.shard]
	if sh.keyID != keyID || sh.dead.Load() || !c.valid(sh.expires) {
		return shard.Match{}, false, nil
	}
	chunks, err := c.xorbChunks(sh, x, uint32(xi))
	if err != nil {
		return shard.Match{}, false, err
	}
	if chunks == nil {
		return shard.Match{}, false, nil
	}
	idx := ref - x.base
	if chunks[idx].Hash != probe {
		return shard.Match{}, false, nil
	}
	return shard.Match{Xorb: x.hash, Index: idx, Chunks: chunks, Key: v.keys[keyID]}, true, nil
}

// xorbOf returns the index of the xorb holding ref.
func (v *view) xorbOf(ref uint32) (int, bool) {
	lo, hi := 0, len(v.xorbs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if v.xorbs[m].base <= ref {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	if i < 0 || ref-v.xorbs[i].base >= v.xorbs[i].n {
		return 0, false
	}
	return i, true
}

// valid reports whether a shard expiring at expires (Unix seconds) may answer now. As in xet-core a
// shard is valid up to and including its expiry second; 0 is expired.
func (c *Cache) valid(expires uint64) bool {
	now := c.now().Unix()
	return now >= 0 && uint64(now) <= expires && expires != 0
}

// deletable reports whether an expired shard is past the grace period.
func (c *Cache) deletable(expires uint64) bool {
	now := c.now().Unix()
	grace := uint64(ExpiredGrace / time.Second)
	return expires <= ^uint64(0)-grace && now >= 0 && expires+grace <= uint64(now)
}
