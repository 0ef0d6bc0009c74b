package upload

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// The chunk index answers like a map from hash to the first (xorb, chunk) recorded, through
// growth, with many hashes sharing a truncated key (only the full hash tells them apart), and says
// no for hashes never added, including ones whose truncated key is recorded.
func TestChunkIndexMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const xorbs, perXorb = 40, 300
	chunks := make([][]hash.Hash, xorbs)
	idx := newChunkIndex(func(ord, i uint32) (hash.Hash, bool) {
		if int(ord) >= len(chunks) || int(i) >= len(chunks[ord]) {
			return hash.Hash{}, false
		}
		return chunks[ord][i], true
	}, 1<<30)
	type loc struct{ ord, i uint32 }
	want := map[hash.Hash]loc{}
	random := func(word0 uint64) hash.Hash {
		var h hash.Hash
		binary.LittleEndian.PutUint64(h[0:], word0)
		for k := 8; k < hash.Size; k += 8 {
			binary.LittleEndian.PutUint64(h[k:], r.Uint64())
		}
		return h
	}
	var seen []hash.Hash
	for ord := range uint32(xorbs) {
		for i := range uint32(perXorb) {
			var h hash.Hash
			switch n := r.IntN(10); {
			case n == 0 && len(seen) > 0: // a duplicate chunk: the first location is kept
				h = seen[r.IntN(len(seen))]
			case n < 4: // a truncated key shared by many hashes
				h = random(uint64(r.IntN(8)))
			default:
				h = random(r.Uint64())
			}
			chunks[ord] = append(chunks[ord], h)
			idx.add(h, ord, i)
			if _, ok := want[h]; !ok {
				want[h] = loc{ord, i}
			}
			seen = append(seen, h)
		}
	}
	if idx.n != len(want) {
		t.Errorf("index holds %d chunks, want %d distinct", idx.n, len(want))
	}
	if len(idx.slots) < 4*idx.n/3 || len(idx.slots)&(len(idx.slots)-1) != 0 {
		t.Errorf("%d slots for %d chunks: want a power of two at most 3/4 full", len(idx.slots), idx.n)
	}
	for h, l := range want {
		ord, i, ok := idx.get(h)
		if !ok || ord != l.ord || i != l.i {
			t.Fatalf("get(%s) = %d, %d, %v; want %d, %d", h, ord, i, ok, l.ord, l.i)
		}
	}
	for k := range 2000 {
		h := random(uint64(k % 8)) // shares a recorded truncated key
		if k%2 == 1 {
			h = random(r.Uint64())
		}
		if _, ok := want[h]; ok {
			continue
		}
		if ord, i, ok := idx.get(h); ok {
			t.Fatalf("get(%s) of a hash never added = %d, %d", h, ord, i)
		}
	}
}

// At its byte limit the index stops growing and thins to a sample: its table never exceeds the
// limit, every chunk of the sample is still found where it was first recorded, a chunk that was
// never added is never found, and a chunk found is always at the location recorded for it.
func TestChunkIndexThinsAtItsLimit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const limit = 64 << 10 // bytes: 4096 slots
	var hs []hash.Hash
	idx := newChunkIndex(func(ord, i uint32) (hash.Hash, bool) {
		if ord != 0 || int(i) >= len(hs) {
			return hash.Hash{}, false
		}
		return hs[i], true
	}, limit)
	random := func() hash.Hash {
		var h hash.Hash
		for k := 0; k < hash.Size; k += 8 {
			binary.LittleEndian.PutUint64(h[k:], r.Uint64())
		}
		return h
	}
	const n = 100_000 // ~33 times what the limit holds unthinned
	for i := range n {
		h := random()
		hs = append(hs, h)
		idx.add(h, 0, uint32(i))
		if len(idx.slots)*indexSlotSize > limit {
			t.Fatalf("after %d chunks the table has %d slots (%d bytes), over the %d-byte limit", i+1, len(idx.slots), len(idx.slots)*indexSlotSize, limit)
		}
	}
	if idx.sample == 0 {
		t.Fatalf("%d chunks in %d slots without thinning", n, len(idx.slots))
	}
	sampled, found := 0, 0
	for i, h := range hs {
		ord, j, ok := idx.get(h)
		if h.Truncate()&idx.sample == 0 {
			sampled++
			if !ok {
				t.Fatalf("chunk %d is in the sample (mask %#x) but not found", i, idx.sample)
			}
		}
		if ok {
			found++
			if ord != 0 || j != uint32(i) {
				t.Fatalf("chunk %d found at %d/%d", i, ord, j)
			}
		}
	}
	if found != sampled || sampled == 0 || sampled != idx.n {
		t.Fatalf("found %d chunks, %d in the sample, index holds %d", found, sampled, idx.n)
	}
	for range 10_000 {
		if _, _, ok := idx.get(random()); ok {
			t.Fatal("a chunk never added was found")
		}
	}
	t.Logf("%d chunks: sample mask %#x keeps %d in %d slots", n, idx.sample, idx.n, len(idx.slots))
}

// Keys that survive every thinning (all low bits clear) cannot fill the table: at the limit such
// chunks are left out, adds and gets still end, and what is found is right.
func TestChunkIndexFullOfZeroKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var hs []hash.Hash
	idx := newChunkIndex(func(ord, i uint32) (hash.Hash, bool) {
		if int(i) >= len(hs) {
			return hash.Hash{}, false
		}
		return hs[i], true
	}, 16<<10)
	for i := range 2000 {
		var h hash.Hash // truncated key 0
		for k := 8; k < hash.Size; k += 8 {
			binary.LittleEndian.PutUint64(h[k:], r.Uint64())
		}
		hs = append(hs, h)
		idx.add(h, 0, uint32(i))
	}
	if idx.n*4 > len(idx.slots)*3 || len(idx.slots)*indexSlotSize > 16<<10 {
		t.Fatalf("%d chunks in %d slots", idx.n, len(idx.slots))
	}
	found := 0
	for i, h := range hs {
		if _, j, ok := idx.get(h); ok {
			found++
			if j != uint32(i) {
				t.Fatalf("chunk %d found at %d", i, j)
			}
		}
	}
	if found != idx.n {
		t.Fatalf("found %d, index holds %d", found, idx.n)
	}
}

func BenchmarkChunkIndex(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	hs := make([]hash.Hash, 1<<17)
	for i := range hs {
		for k := 0; k < hash.Size; k += 8 {
			binary.LittleEndian.PutUint64(hs[i][k:], r.Uint64())
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		idx := newChunkIndex(func(ord, i uint32) (hash.Hash, bool) { return hs[i], true }, 1<<30)
		for i, h := range hs {
			idx.add(h, 0, uint32(i))
		}
		for _, h := range hs {
			if _, _, ok := idx.get(h); !ok {
				b.Fatal("missing")
			}
		}
	}
}
