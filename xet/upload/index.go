package upload

import (
	"math/rand/v2"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// chunkIndex finds the chunks of this session's xorbs by hash. It is an open-addressing table
// (linear probing, at most 3/4 full, doubling when it gets there) of 16-byte slots keyed by the
// hash's first word (hash.Truncate): where a map[hash.Hash]loc costs ~90 bytes a chunk, this costs
// ~21 to 43. A slot holds the xorb's ordinal in Session.sxorbs and the chunk's index in that xorb;
// since several chunks may share a truncated key, a candidate is confirmed by comparing the full
// hash with the xorb's chunk list. Slot positions mix the key with a per-index random seed, so
// crafted chunk hashes cannot pile into one probe run.
//
// The table never grows past maxSlots (from Config.IndexBytes). When it is full there, it is thinned:
// only the chunks whose key has its low bits clear under a mask (first 3 bits, then 6, 9, ...) stay,
// and from then on only such chunks are added. A repeat of data indexed before is then found at its
// first sampled chunk instead of its first chunk, and followed from there chunk by chunk as a dedupe
// run (a run needs no index); so past about IndexBytes/21 new chunks a session dedupes against
// itself a little less, and holds no more memory.
//
// Concurrency: like the sxorbs, it belongs to the session's Upload/Finish goroutine.
type chunkIndex struct {
	slots    []indexSlot
	n        int // occupied slots
	shift    uint
	seed     uint64
	maxSlots int    // a power of two
	sample   uint64 // a key is indexed only when key&sample == 0
	// hashAt returns the hash of chunk idx of xorb ord (false when there is no such chunk).
	hashAt func(ord, idx uint32) (hash.Hash, bool)
}

type indexSlot struct {
	key uint64
	ord uint32 // xorb ordinal + 1; 0 marks an empty slot
	idx uint32
}

const (
	indexMinSlots   = 1 << 10 // the smallest cap
	indexStartSlots = 1 << 4  // a small file's session indexes a few chunks; the table doubles as it fills
)

// newChunkIndex returns an index of at most maxBytes (rounded down to a power of two of slots, at
// least indexMinSlots).
func newChunkIndex(hashAt func(ord, idx uint32) (hash.Hash, bool), maxBytes int) *chunkIndex {
	maxSlots := indexMinSlots
	for maxSlots*2*indexSlotSize <= maxBytes {
		maxSlots *= 2
	}
	return &chunkIndex{seed: rand.Uint64(), hashAt: hashAt, maxSlots: maxSlots}
}

const indexSlotSize = 16 // bytes of an indexSlot

// same reports whether the chunk of slot s has hash h.
func (t *chunkIndex) same(s *indexSlot, h hash.Hash) bool {
	got, ok := t.hashAt(s.ord-1, s.idx)
	return ok && got == h
}

func (t *chunkIndex) pos(key uint64) uint64 {
	return ((key ^ t.seed) * 0x9e3779b97f4a7c15) >> t.shift
}

// get returns the first chunk recorded under h: the ordinal of its xorb and its index there.
func (t *chunkIndex) get(h hash.Hash) (uint32, uint32, bool) {
	if t.n == 0 {
		return 0, 0, false
	}
	key := h.Truncate()
	if key&t.sample != 0 {
		return 0, 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for p := t.pos(key); ; p = (p + 1) & mask {
		s := &t.slots[p]
		if s.ord == 0 {
			return 0, 0, false
		}
		if s.key == key && t.same(s, h) {
			return s.ord - 1, s.idx, true
		}
	}
}

// add records chunk idx of xorb ord under h, unless a chunk with hash h is recorded already (the
// first one recorded is kept).
func (t *chunkIndex) add(h hash.Hash, ord, idx uint32) {
	key := h.Truncate()
	if key&t.sample != 0 {
		return
	}
	if (t.n+1)*4 > len(t.slots)*3 {
		if len(t.slots) >= t.maxSlots {
			t.thin()
			// Still too full (keys that share their low bits; not from real chunk hashes): the
			// chunk is left out rather than filling the table.
			if key&t.sample != 0 || (t.n+1)*4 > len(t.slots)*3 {
				return
			}
		} else {
			t.grow()
		}
	}
	mask := uint64(len(t.slots) - 1)
	for p := t.pos(key); ; p = (p + 1) & mask {
		s := &t.slots[p]
		if s.ord == 0 {
			*s = indexSlot{key: key, ord: ord + 1, idx: idx}
			t.n++
			return
		}
		if s.key == key && t.same(s, h) {
			return
		}
	}
}

// grow doubles the table (or makes the first one) and reinserts every slot.
func (t *chunkIndex) grow() {
	size := indexStartSlots
	if len(t.slots) > 0 {
		size = 2 * len(t.slots)
	}
	old := t.slots
	t.slots = make([]indexSlot, size)
	t.shift = uint(64 - log2(size))
	t.n = 0
	t.reinsert(old)
}

// thin keeps one key in eight of those indexed (the next three low bits join the sample mask),
// rebuilding the table in place; each thinning frees about 7/8 of it.
func (t *chunkIndex) thin() {
	t.sample = t.sample<<3 | 7
	old := make([]indexSlot, 0, t.n/4+1)
	for _, s := range t.slots {
		if s.ord != 0 && s.key&t.sample == 0 {
			old = append(old, s)
		}
	}
	clear(t.slots)
	t.n = 0
	t.reinsert(old)
}

// reinsert puts slots into the (emptied or new) table, in their order.
func (t *chunkIndex) reinsert(slots []indexSlot) {
	mask := uint64(len(t.slots) - 1)
	for _, s := range slots {
		if s.ord == 0 {
			continue
		}
		p := t.pos(s.key)
		for t.slots[p].ord != 0 {
			p = (p + 1) & mask
		}
		t.slots[p] = s
		t.n++
	}
}

func log2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}
