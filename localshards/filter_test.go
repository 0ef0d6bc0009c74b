package localshards

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// filterKeySets returns named key sets: uniform (what BLAKE3 gives) and skewed ones a hostile or
// unlucky input could hold (shared top bits, shared low bits, tiny integers, the empty-slot marker).
func filterKeySets(n int, seed uint64) map[string][]uint64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	sets := map[string][]uint64{}
	add := func(name string, f func(i int) uint64) {
		ks := make([]uint64, n)
		for i := range ks {
			ks[i] = f(i)
		}
		sets[name] = ks
	}
	add("random", func(int) uint64 { return rng.Uint64() })
	add("same-top-bits", func(i int) uint64 { return 0x7000_0000_0000_0000 | uint64(i)*7919 })
	add("same-low-bits", func(i int) uint64 { return uint64(i)<<40 | 0xabcd })
	add("small-ints", func(i int) uint64 { return uint64(i) })
	add("one-block", func(i int) uint64 { return 0xffff_fff0_0000_0000 | uint64(i) })
	add("dups-and-marker", func(i int) uint64 {
		switch i % 3 {
		case 0:
			return emptyKey
		case 1:
			return 42
		}
		return rng.Uint64()
	})
	return sets
}

// TestFilterNoFalseNegatives: every added key passes the filter, whatever the key distribution and
// filter size (a false negative would make a cached chunk look new and lose a dedupe match).
func TestFilterNoFalseNegatives(t *testing.T) {
	for _, n := range []int{1, 7, 64, 1000, 1 << 16} {
		for name, keys := range filterKeySets(n, uint64(n)) {
			f := newFilter(n)
			for _, k := range keys {
				f.add(k)
			}
			for i, k := range keys {
				if !f.mayContain(k) {
					t.Fatalf("n=%d %s: added key %d (%#x) rejected", n, name, i, k)
				}
			}
		}
	}
}

// TestSegmentFilterNoFalseNegatives: segments large enough to carry a filter still find every entry
// through candidates/has, for uniform and skewed keys, and reject most absent keys.
func TestSegmentFilterNoFalseNegatives(t *testing.T) {
	const n = 100_000
	for name, keys := range filterKeySets(n, 3) {
		refs := make([]uint32, n)
		for i := range refs {
			refs[i] = uint32(i)
		}
		want := slices.Clone(keys)
		s := buildSegment(keys, refs)
		if s.filter == nil {
			t.Fatalf("%s: %d slots and no filter", name, len(s.keys))
		}
		for i, k := range want {
			// has on every key would be quadratic for the keys that share one bucket
			if !s.filter.mayContain(k) || (i%97 == 0 && !s.has(k)) {
				t.Fatalf("%s: key %d (%#x) not found", name, i, k)
			}
		}
	}
}

// TestFilterFalsePositiveRate: at 8 bits per key a split-block filter passes about 2-3% of absent
// keys; the bound is loose (the point is that most misses stop at the filter).
func TestFilterFalsePositiveRate(t *testing.T) {
	const n, probes = 1 << 20, 1 << 20
	rng := rand.New(rand.NewPCG(11, 12))
	keys := make([]uint64, n)
	refs := make([]uint32, n)
	present := make(map[uint64]bool, n)
	for i := range keys {
		keys[i], refs[i] = rng.Uint64(), uint32(i)
		present[keys[i]] = true
	}
	s := buildSegment(keys, refs)
	fp, absent := 0, 0
	for i := 0; i < probes; i++ {
		k := rng.Uint64()
		if present[k] {
			continue
		}
		absent++
		if s.filter.mayContain(k) {
			fp++
		}
	}
	rate := float64(fp) / float64(absent)
	t.Logf("false positive rate %.2f%% (%d of %d), filter %d bytes for %d keys", 100*rate, fp, absent, len(s.filter.blocks)*64, n)
	if rate > 0.05 {
		t.Errorf("false positive rate %.2f%%, want below 5%%", 100*rate)
	}
	if len(s.filter.blocks)*64 > n*filterBitsPerKey/8+64 {
		t.Errorf("filter of %d bytes for %d keys", len(s.filter.blocks)*64, n)
	}
}

// FuzzFilter: for any key set (8 bytes each of the input) and any filter size at least the number
// of keys' worth, every added key passes the filter. Seeds: testdata/fuzz/FuzzFilter.
func FuzzFilter(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), uint16(0))
	f.Add(make([]byte, 64), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, extra uint16) {
		keys := make([]uint64, 0, len(data)/8)
		for ; len(data) >= 8; data = data[8:] {
			keys = append(keys, binary.LittleEndian.Uint64(data))
		}
		f := newFilter(len(keys) + int(extra))
		for _, k := range keys {
			f.add(k)
		}
		for _, k := range keys {
			if !f.mayContain(k) {
				t.Fatalf("added key %#x rejected (%d keys, %d blocks)", k, len(keys), f.nb)
			}
		}
	})
}

func BenchmarkBuildFilter16M(b *testing.B) {
	const n = 16 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, n)
	refs := make([]uint32, n)
	for i := range keys {
		keys[i], refs[i] = rng.Uint64(), uint32(i)
	}
	s := buildSegment(keys, refs)
	b.SetBytes(int64(len(s.keys)) * 12)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buildFilter(s)
	}
}
