package store

import (
	"bytes"
	"container/list"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
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

// Footer v1 layout constants (see xet-formats.md §3.4).
const (
	footerFixed   = 92 // info_length of a footer with no chunks
	footerPerItem = 40
	maxFooterLen  = footerFixed + footerPerItem*8192
)

// parseStoredFooter reads the v1 footer at the end of a stored xorb object of the given size and
// checks it against the name it is stored under and the records region it must describe.
func parseStoredFooter(want hash.Hash, b interface {
	ReadAt([]byte, int64) (int, error)
}, size int64) (*xorbMeta, error) {
	bad := func(what string) error {
		return fmt.Errorf("store: stored xorb %s: corrupt footer: %s", want, what)
	}
	if size < 4+footerFixed {
		return nil, bad("object too short")
	}
	var trailer [4]byte
	if _, err := b.ReadAt(trailer[:], size-4); err != nil {
		return nil, fmt.Errorf("store: reading xorb %s: %w", want, err)
	}
	infoLen := int64(binary.LittleEndian.Uint32(trailer[:]))
	if infoLen < footerFixed || infoLen > maxFooterLen || infoLen > size-4 || (infoLen-footerFixed)%footerPerItem != 0 {
		return nil, bad("info length")
	}
	f := make([]byte, infoLen)
	if _, err := b.ReadAt(f, size-4-infoLen); err != nil {
		return nil, fmt.Errorf("store: reading xorb %s: %w", want, err)
	}
	n := int((infoLen - footerFixed) / footerPerItem)
	le := binary.LittleEndian
	switch {
	case !bytes.Equal(f[0:7], []byte("XETBLOB")) || f[7] != 1:
		return nil, bad("magic or version")
	case !bytes.Equal(f[8:40], want[:]):
		return nil, bad("hash differs from name")
	case !bytes.Equal(f[40:47], []byte("XBLBHSH")) || f[47] != 0 || int(le.Uint32(f[48:])) != n:
		return nil, bad("hash section")
	}
	o := 52 + 32*n
	if !bytes.Equal(f[o:o+7], []byte("XBLBBND")) || f[o+7] != 1 || int(le.Uint32(f[o+8:])) != n {
		return nil, bad("boundary section")
	}
	t := 64 + 40*n
	if int(le.Uint32(f[t:])) != n || le.Uint32(f[t+4:]) != uint32(52+40*n) || le.Uint32(f[t+8:]) != uint32(40+8*n) {
		return nil, bad("trailer")
	}
	if n == 0 {
		return nil, bad("no chunks")
	}
	m := &xorbMeta{
		hash:      want,
		hashes:    make([]hash.Hash, n),
		boundEnds: make([]uint32, n),
		rawEnds:   make([]uint32, n),
	}
	for i := 0; i < n; i++ {
		copy(m.hashes[i][:], f[52+32*i:])
		m.boundEnds[i] = le.Uint32(f[64+32*n+4*i:])
		m.rawEnds[i] = le.Uint32(f[64+36*n+4*i:])
		if m.boundEnds[i] <= m.recordStart(i) || m.rawEnds[i] <= m.rawStart(i) {
			return nil, bad("offsets not increasing")
		}
	}
	if int64(m.recordsLen()) != size-4-infoLen {
		return nil, bad("records length")
	}
	return m, nil
}

// xorbMeta returns the chunk index of a stored xorb (ErrNotFound when missing), from the cache or
// from the footer.
func (s *Store) xorbMeta(ctx context.Context, h hash.Hash) (*xorbMeta, error) {
	if m := s.meta.get(h); m != nil {
		return m, nil
	}
	b, err := s.be.Open(ctx, xorbName(h))
	if err != nil {
		return nil, fmt.Errorf("xorb %s: %w", h, err)
	}
	defer b.Close()
	return s.xorbMetaFrom(h, b)
}

func (s *Store) xorbMetaFrom(h hash.Hash, b Blob) (*xorbMeta, error) {
	if m := s.meta.get(h); m != nil {
		return m, nil
	}
	m, err := parseStoredFooter(h, b, b.Size())
	if err != nil {
		return nil, err
	}
	s.meta.put(m)
	return m, nil
}

// metaCache is a byte-bounded LRU of parsed xorb footers. Safe for concurrent use.
type metaCache struct {
	mu    sync.Mutex
	limit int64
	used  int64
	ll    *list.List // front = most recent; values *xorbMeta
	items map[hash.Hash]*list.Element
}

func newMetaCache(limit int64) *metaCache {
	return &metaCache{limit: limit, ll: list.New(), items: make(map[hash.Hash]*list.Element)}
}

func (c *metaCache) get(h hash.Hash) *xorbMeta {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[h]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*xorbMeta)
	}
	return nil
}

func (c *metaCache) put(m *xorbMeta) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[m.hash]; ok || m.cost() > c.limit {
		return
	}
	c.items[m.hash] = c.ll.PushFront(m)
	c.used += m.cost()
	for c.used > c.limit {
		e := c.ll.Back()
		old := e.Value.(*xorbMeta)
		c.ll.Remove(e)
		delete(c.items, old.hash)
		c.used -= old.cost()
	}
}
