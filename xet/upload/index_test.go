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
	})
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
		idx := newChunkIndex(func(ord, i uint32) (hash.Hash, bool) { return hs[i], true })
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
