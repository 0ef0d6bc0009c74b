package xetfile

import (
	"container/list"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// memCache keeps verified chunks in memory, least recently used out first, up to a byte bound. The
// slices it hands out are never written again: a reader may keep one after it was evicted.
type memCache struct {
	mu    sync.Mutex
	bound int64
	bytes int64
	order *list.List // of *memEntry, most recent first
	byKey map[hash.Hash]*list.Element
}

type memEntry struct {
	h    hash.Hash
	data []byte
}

func newMemCache(bound int64) *memCache {
	return &memCache{bound: bound, order: list.New(), byKey: map[hash.Hash]*list.Element{}}
}

func (m *memCache) get(h hash.Hash) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.byKey[h]
	if e == nil {
		return nil, false
	}
	m.order.MoveToFront(e)
	return e.Value.(*memEntry).data, true
}

func (m *memCache) has(h hash.Hash) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byKey[h] != nil
}

func (m *memCache) put(h hash.Hash, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.byKey[h]; e != nil {
		m.order.MoveToFront(e)
		return
	}
	m.byKey[h] = m.order.PushFront(&memEntry{h: h, data: data})
	m.bytes += int64(len(data))
	for m.bytes > m.bound && m.order.Len() > 1 {
		old := m.order.Remove(m.order.Back()).(*memEntry)
		delete(m.byKey, old.h)
		m.bytes -= int64(len(old.data))
	}
}
