package localshards

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// collect returns the refs stored under key, sorted, probing as Cache.find does.
func collect(s *segment, key uint64) []uint32 {
	var out []uint32
	for i := s.candidates(key, 0); i >= 0; i = s.candidates(key, i+1) {
		if s.keys[i] != key {
			panic("candidate with another key")
		}
		out = append(out, s.refs[i])
	}
	slices.Sort(out)
	return out
}

// collectScan is the reference: every non-empty slot holding key.
func collectScan(s *segment, key uint64) []uint32 {
	var out []uint32
	for i, k := range s.keys {
		if k == key && s.refs[i] != noRef {
			out = append(out, s.refs[i])
		}
	}
	slices.Sort(out)
	return out
}

func TestSegmentFindsEveryEntry(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 100, 5000, 1 << 17, 300_000} {
		for _, seed := range []uint64{1, 2} {
			rng := rand.New(rand.NewPCG(uint64(n), seed))
			keys := make([]uint64, n)
			refs := make([]uint32, n)
			want := map[uint64][]uint32{}
			for i := range keys {
				k := rng.Uint64()
				if i > 0 && i%10 == 0 {
					k = keys[rng.IntN(i)] // duplicates: the same chunk in several xorbs
				}
				if i%997 == 0 {
					k = uint64(i) // clustered small keys all land in bucket 0
				}
				if i%1999 == 1 {
					k = emptyKey // a real key equal to the empty-slot marker
				}
				keys[i], refs[i] = k, uint32(i)
				want[k] = append(want[k], uint32(i))
			}
			s := buildSegment(keys, refs)
			used := 0
			for _, r := range s.refs {
				if r != noRef {
					used++
				}
			}
			if s.len() != n || used != n || len(s.keys) < int(s.nb)*slotsPerBucket || len(s.refs) != len(s.keys) {
				t.Fatalf("n=%d: len %d, %d used of %d slots, %d buckets", n, s.len(), used, len(s.keys), s.nb)
			}
			if n > 1000 && len(s.keys) > n*3/2 {
				t.Errorf("n=%d: %d slots, more than 1.5 per entry", n, len(s.keys))
			}
			for k, rs := range want {
				slices.Sort(rs)
				if got := collect(s, k); !slices.Equal(got, rs) {
					t.Fatalf("n=%d seed=%d key %x: refs %v, want %v", n, seed, k, got, rs)
				}
				if n <= 5000 {
					if got := collectScan(s, k); !slices.Equal(got, rs) {
						t.Fatalf("n=%d: table holds refs %v for key %x, want %v", n, got, k, rs)
					}
				}
			}
			for i := 0; i < 1000; i++ {
				k := rng.Uint64()
				if _, ok := want[k]; !ok && s.has(k) {
					t.Fatalf("n=%d: absent key %x found", n, k)
				}
			}
		}
	}
}

// TestSegmentSkewedKeys: keys that all share their top bits (not what BLAKE3 produces, but what a
// hostile dedupe answer could hold) still index and probe correctly.
func TestSegmentSkewedKeys(t *testing.T) {
	const n = 4000
	keys := make([]uint64, n)
	refs := make([]uint32, n)
	for i := range keys {
		keys[i] = 0x7000_0000_0000_0000 | uint64(i*7919%n)<<8
		refs[i] = uint32(i)
	}
	want := slices.Clone(keys)
	s := buildSegment(keys, refs)
	for i, k := range want {
		if got := collect(s, k); len(got) != 1 || got[0] != uint32(i) {
			t.Fatalf("key %d: refs %v", i, got)
		}
	}
	if s.has(0x7000_0000_0000_0001) {
		t.Fatal("absent key found")
	}
}

func BenchmarkBuildSegment16M(b *testing.B) {
	const n = 16 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]uint64, n)
	for i := range src {
		src[i] = rng.Uint64()
	}
	b.SetBytes(n * 12)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		keys := slices.Clone(src)
		refs := make([]uint32, n)
		b.StartTimer()
		buildSegment(keys, refs)
	}
}
