package store

import (
	"container/list"
	"context"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// xorbMeta is the chunk index of a stored xorb, read from its footer: per chunk its hash, the end of
// its record in the records region and the cumulative end of its raw bytes. Immutable once built.
type xorbMeta struct {
	hash      hash.Hash
	hashes    []hash.Hash
	boundEnds []uint32
	rawEnds   []uint32
}

func (m *xorbMeta) n() int { return len(m.hashes) }

func (m *xorbMeta) recordsLen() uint32 { return m.boundEnds[len(m.boundEnds)-1] }

func (m *xorbMeta) recordStart(i int) uint32 {
	if i == 0 {
		return 0
	}
	return m.boundEnds[i-1]
}

func (m *xorbMeta) rawStart(i int) uint32 {
	if i == 0 {
		return 0
	}
	return m.rawEnds[i-1]
}

func (m *xorbMeta) rawLen(i int) uint32 { return m.rawEnds[i] - m.rawStart(i) }

// rawBytes returns the raw length of chunks [start, end).
func (m *xorbMeta) rawBytes(start, end int) uint32 { return m.rawStart(end) - m.rawStart(start) }

// chunkAt returns the index of the chunk of [start, end) holding raw offset off (relative to the start
// of chunk start); off must be below rawBytes(start, end).
func (m *xorbMeta) chunkAt(start, end int, off uint64) int {
	base := uint64(m.rawStart(start))
	return start + sort.Search(end-start, func(i int) bool {
		return uint64(m.rawEnds[start+i])-base > off
	})
}

func (m *xorbMeta) cost() int64 { return int64(len(m.hashes))*40 + 128 }

// parseStoredFooter reads the footer at the end of a stored xorb object of the given size
// (xorb.ReadFooter) and checks it against the name it is stored under and what the store writes:
// version 1 (raw ends present), at least one chunk, and every chunk non-empty.
func parseStoredFooter(want hash.Hash, b io.ReaderAt, size int64) (*xorbMeta, error) {
	f, recordsLen, err := xorb.ReadFooter(b, size)
	if err != nil {
		return nil, fmt.Errorf("store: stored xorb %s: corrupt footer: %w", want, err)
	}
	bad := func(what string) error {
		return fmt.Errorf("store: stored xorb %s: corrupt footer: %s", want, what)
	}
	switch {
	case f.Version != 1:
		return nil, bad(fmt.Sprintf("version %d, the store writes 1", f.Version))
	case f.Hash != want:
		return nil, bad("hash differs from name")
	case len(f.ChunkHashes) == 0:
		return nil, bad("no chunks")
	}
	m := &xorbMeta{hash: want, hashes: f.ChunkHashes, boundEnds: f.BoundaryEnds, rawEnds: f.RawEnds}
	for i := range m.rawEnds {
		if m.rawEnds[i] <= m.rawStart(i) {
			return nil, bad("offsets not increasing")
		}
	}
	if int64(m.recordsLen()) != recordsLen {
		return nil, bad("records length")
	}
	return m, nil
}

// xorbMeta returns the chunk index of a stored xorb (ErrNotFound when missing), from the cache or
// from the footer.
func (s *Store) xorbMeta(ctx context.Context, h hash.Hash) (*xorbMeta, error) {
	if m, ok := s.meta.get(h); ok {
		return m, nil
	}
	b, err := s.openXorbBlob(ctx, h)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return s.xorbMetaFrom(ctx, h, b)
}

func (s *Store) xorbMetaFrom(ctx context.Context, h hash.Hash, b blob.Blob) (*xorbMeta, error) {
	if m, ok := s.meta.get(h); ok {
		return m, nil
	}
	m, err := parseStoredFooter(h, blob.ReaderAt(ctx, b), b.Size())
	if err != nil {
		return nil, err
	}
	s.meta.put(h, m)
	return m, nil
}

// lru is a byte-bounded LRU cache (parsed xorb footers, stored entries). Safe for concurrent use.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	limit int64
	used  int64
	cost  func(V) int64
	ll    *list.List // front = most recent; values lruItem
	items map[K]*list.Element
}

type lruItem[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](limit int64, cost func(V) int64) *lru[K, V] {
	return &lru[K, V]{limit: limit, cost: cost, ll: list.New(), items: make(map[K]*list.Element)}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(lruItem[K, V]).val, true
	}
	var zero V
	return zero, false
}

func (c *lru[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok || c.cost(v) > c.limit {
		return
	}
	c.items[k] = c.ll.PushFront(lruItem[K, V]{k, v})
	c.used += c.cost(v)
	for c.used > c.limit {
		e := c.ll.Back()
		old := e.Value.(lruItem[K, V])
		c.ll.Remove(e)
		delete(c.items, old.key)
		c.used -= c.cost(old.val)
	}
}

// drop forgets k (a xorb whose stored copy was moved aside).
func (c *lru[K, V]) drop(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.Remove(e)
		delete(c.items, k)
		c.used -= c.cost(e.Value.(lruItem[K, V]).val)
	}
}
