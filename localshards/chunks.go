package localshards

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// chunkCacheEntries bounds the decoded chunk lists kept for hits: 256Ki chunks, 12 MiB.
const chunkCacheEntries = 256 << 10

// chunkCache keeps the decoded chunk lists of recently matched xorbs, keyed by xorb index, so that
// the lookups of consecutive chunks of one xorb read the shard file once. Reads are lock-free
// (sync.Map); inserts take mu to keep the total under limit entries (random eviction).
type chunkCache struct {
	m       sync.Map // uint32 -> []shard.XorbChunk
	mu      sync.Mutex
	entries int
	limit   int
}

func (cc *chunkCache) init(limit int) { cc.limit = limit }

func (cc *chunkCache) get(xi uint32) []shard.XorbChunk {
	if v, ok := cc.m.Load(xi); ok {
		return v.([]shard.XorbChunk)
	}
	return nil
}

func (cc *chunkCache) put(xi uint32, c []shard.XorbChunk) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if _, ok := cc.m.Load(xi); ok {
		return
	}
	cc.m.Range(func(k, v any) bool { // evict in map order until the new list fits
		if cc.entries+len(c) <= cc.limit {
			return false
		}
		cc.m.Delete(k)
		cc.entries -= len(v.([]shard.XorbChunk))
		return true
	})
	cc.m.Store(xi, c)
	cc.entries += len(c)
}

func (cc *chunkCache) reset() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.m.Clear()
	cc.entries = 0
}

// xorbChunks returns the chunk list of xorb x (index xi) of shard sh, read from its file on the
// first request. It returns nil, nil when the file is gone or malformed (then the shard is marked
// dead, and a malformed file is set aside).
func (c *Cache) xorbChunks(sh *shardInfo, x *xorbInfo, xi uint32) ([]shard.XorbChunk, error) {
	if ch := c.chunks.get(xi); ch != nil {
		return ch, nil
	}
	path := filepath.Join(c.dir, sh.name)
	single := isSinglesName(sh.name)
	size := (int(x.n) + 1) * shard.EntrySize
	if single {
		size = singleSize
	}
	buf, err := readAt(path, x.off, size)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			sh.dead.Store(true)
			return nil, nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, errFormat) {
			c.setAside(sh.name, err)
			sh.dead.Store(true)
			return nil, nil
		}
		return nil, err
	}
	var ch []shard.XorbChunk
	if single {
		ch, err = decodeSingle(buf, x.hash)
	} else {
		ch, err = decodeXorb(buf, x.hash, x.n)
	}
	if err != nil {
		c.setAside(sh.name, err)
		sh.dead.Store(true)
		return nil, nil
	}
	c.chunks.put(xi, ch)
	return ch, nil
}

// readAt reads n bytes at off of the file at path (a regular file: openRegular).
func readAt(path string, off int64, n int) ([]byte, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// keyedHasher computes hash.Keyed(key, h) with pooled BLAKE3 states (no per-call key setup).
type keyedHasher struct {
	pool sync.Pool
}

func newKeyedHasher(key hash.Hash) *keyedHasher {
	k := &keyedHasher{}
	k.pool.New = func() any {
		h, err := blake3.NewKeyed(key[:])
		if err != nil { // a 32-byte key cannot fail
			panic(err)
		}
		return h
	}
	return k
}

func (k *keyedHasher) sum(h hash.Hash) hash.Hash {
	b := k.pool.Get().(*blake3.Hasher)
	b.Reset()
	_, _ = b.Write(h[:])
	var out hash.Hash
	b.Sum(out[:0])
	k.pool.Put(b)
	return out
}
