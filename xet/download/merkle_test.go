package download

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// termEntries makes n terms of 1 to 40 random chunk entries.
func termEntries(r *rand.Rand, n int) [][]hash.Entry {
	terms := make([][]hash.Entry, n)
	for i := range terms {
		terms[i] = make([]hash.Entry, 1+r.IntN(40))
		for k := range terms[i] {
			for b := range terms[i][k].Hash {
				terms[i][k].Hash[b] = byte(r.Uint32())
			}
			terms[i][k].Size = uint64(8192 + r.IntN(120000))
		}
	}
	return terms
}

// The file hash from terms finished in any order equals hash.File of the chunks in file order,
// whether the terms waiting beyond the frontier stay in memory or go to the spill file, and the
// spill file leaves nothing behind.
func TestMerkleStreamAnyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for _, tc := range []struct {
		name   string
		budget int64
	}{{"in memory", defaultWaitBudget}, {"spilled", 3 * entryRecord * 40}} {
		for _, order := range []string{"in order", "reversed", "shuffled"} {
			terms := termEntries(r, 300)
			var all []hash.Entry
			for _, ts := range terms {
				all = append(all, ts...)
			}
			idx := make([]int, len(terms))
			for i := range idx {
				idx[i] = i
			}
			switch order {
			case "reversed":
				for i, j := 0, len(idx)-1; i < j; i, j = i+1, j-1 {
					idx[i], idx[j] = idx[j], idx[i]
				}
			case "shuffled":
				r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
			}
			dir := t.TempDir()
			m := newMerkleStream(len(terms), dir, tc.budget)
			for _, ti := range idx {
				if err := m.done(ti, append([]hash.Entry(nil), terms[ti]...)); err != nil {
					t.Fatalf("%s, %s: done(%d): %v", tc.name, order, ti, err)
				}
				if m.held > tc.budget {
					t.Fatalf("%s, %s: %d bytes of waiting entries held, budget %d", tc.name, order, m.held, tc.budget)
				}
			}
			got, err := m.sum()
			if err != nil {
				t.Fatalf("%s, %s: %v", tc.name, order, err)
			}
			if want := hash.File(all); got != want {
				t.Fatalf("%s, %s: file hash %s, want %s", tc.name, order, got, want)
			}
			spilled := m.spill != nil
			m.close()
			if tc.name == "spilled" && order != "in order" && !spilled {
				t.Errorf("%s, %s: nothing was spilled", tc.name, order)
			}
			if tc.name == "in memory" && spilled {
				t.Errorf("%s, %s: spilled within budget", tc.name, order)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("%s, %s: %d files left in the temp dir", tc.name, order, len(left))
			}
		}
	}
}

// A term finished twice or out of bounds, or a sum before every term is done, is an error.
func TestMerkleStreamMisuse(t *testing.T) {
	m := newMerkleStream(3, t.TempDir(), defaultWaitBudget)
	e := []hash.Entry{{Size: 1}}
	if err := m.done(1, e); err != nil {
		t.Fatal(err)
	}
	if err := m.done(1, e); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("term done twice: %v", err)
	}
	if _, err := m.sum(); err == nil {
		t.Fatal("sum with terms missing succeeded")
	}
	if err := m.done(3, e); err == nil {
		t.Fatal("term 3 of 3 accepted")
	}
	if err := m.done(0, e); err != nil {
		t.Fatal(err)
	}
	if err := m.done(0, e); err == nil {
		t.Fatal("term behind the frontier accepted")
	}
}
