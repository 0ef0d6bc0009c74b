package hash

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
)

// randomEntry returns an entry with a random hash whose hash % 4 is forced by mod (-1: left random,
// 0: == 0, 1: != 0).
func randomEntry(r *rand.Rand, mod int) Entry {
	var h Hash
	for i := 0; i < Size; i += 8 {
		binary.LittleEndian.PutUint64(h[i:], r.Uint64())
	}
	w := h.Word(3)
	switch mod {
	case 0:
		w &^= 3
	case 1:
		if w%4 == 0 {
			w |= 1 + r.Uint64N(3)
		}
	}
	binary.LittleEndian.PutUint64(h[24:], w)
	return Entry{Hash: h, Size: 1 + r.Uint64N(1<<17)}
}

// TestMerkleBuilderMatchesMerkle checks Sum and FileSum against Merkle and File after every Add, for
// every length up to 3000 with random hashes, and with patterns of hash % 4 that make groups of the
// minimum (3), the maximum (9) and mixed sizes: after every Add up to 800 entries, then every 11th
// (Merkle is recomputed from scratch each time, so checking all 3000 lengths of every pattern would
// take seconds).
func TestMerkleBuilderMatchesMerkle(t *testing.T) {
	maxLen := 3000
	if testing.Short() {
		maxLen = 600
	}
	patterns := map[string]func(i int) int{
		"random":       func(int) int { return -1 },
		"all %4==0":    func(int) int { return 0 },
		"none %4==0":   func(int) int { return 1 },
		"every third":  func(i int) int { return map[bool]int{true: 0, false: 1}[i%3 == 2] },
		"every eighth": func(i int) int { return map[bool]int{true: 0, false: 1}[i%8 == 5] },
		"bursts": func(i int) int {
			if i%50 < 20 {
				return 0
			}
			return -1
		},
	}
	for name, pat := range patterns {
		dense := 800
		if name == "random" {
			dense = maxLen
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(len(name)), 7))
			var b MerkleBuilder
			if b.Sum() != Zero || b.FileSum() != Zero {
				t.Fatalf("empty builder: Sum %s FileSum %s, want zero", b.Sum(), b.FileSum())
			}
			entries := make([]Entry, 0, maxLen)
			for n := 1; n <= maxLen; n++ {
				e := randomEntry(r, pat(n-1))
				entries = append(entries, e)
				b.Add(e)
				if n > dense && n%11 != 0 && n != maxLen {
					continue
				}
				if got, want := b.Sum(), Merkle(entries); got != want {
					t.Fatalf("%d entries: Sum %s, Merkle %s", n, got, want)
				}
				if n%97 == 0 || n < 40 {
					if got, want := b.FileSum(), File(entries); got != want {
						t.Fatalf("%d entries: FileSum %s, File %s", n, got, want)
					}
				}
			}
			if b.Len() != uint64(maxLen) {
				t.Errorf("Len %d, want %d", b.Len(), maxLen)
			}
			b.Reset()
			if b.Sum() != Zero || b.Len() != 0 {
				t.Errorf("after Reset: Sum %s Len %d", b.Sum(), b.Len())
			}
		})
	}
}

func TestMerkleBuilderVectors(t *testing.T) {
	cases := vectors.Cases(t)
	if len(cases) != 18 {
		t.Fatalf("%d CASE vectors, want 18", len(cases))
	}
	outputs := 0
	for i, c := range cases {
		var b MerkleBuilder
		for _, ch := range c.Chunks {
			b.Add(Entry{mustParse(ch.Hash), ch.Size})
		}
		if c.Xorb != "" {
			outputs++
			if got := b.Sum(); got.String() != c.Xorb {
				t.Errorf("case %d: Sum = %s, want %s", i, got, c.Xorb)
			}
		}
		for _, s := range c.Salted {
			outputs++
			if got := b.FileSumWithSalt(mustParse(s[0])); got.String() != s[1] {
				t.Errorf("case %d salt %s: FileSumWithSalt = %s, want %s", i, s[0], got, s[1])
			}
		}
	}
	if outputs != 72 {
		t.Errorf("checked %d outputs, want 72", outputs)
	}
}

func BenchmarkMerkleBuilder(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	entries := make([]Entry, 8192)
	for i := range entries {
		entries[i] = randomEntry(r, -1)
	}
	b.SetBytes(int64(len(entries)) * 64 << 10)
	b.ReportAllocs()
	for b.Loop() {
		var mb MerkleBuilder
		for _, e := range entries {
			mb.Add(e)
		}
		_ = mb.Sum()
	}
}

// A node hash allocates nothing: it runs once per few chunks of every file hashed (about 70,000
// times for a 16 GiB file), and the text it hashes used to be built per call, a string per child.
func TestNodeAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	children := make([]Entry, 9)
	for i := range children {
		children[i] = randomEntry(r, -1)
	}
	children[8].Size = 1<<64 - 1 // the longest line a child can make
	if n := testing.AllocsPerRun(100, func() { Node(children) }); n != 0 {
		t.Fatalf("Node of 9 children allocated %v times per call, want 0", n)
	}
}
