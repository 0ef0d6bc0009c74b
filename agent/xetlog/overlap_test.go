package xetlog

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

var xA, xB = hash.Hash{1}, hash.Hash{2}

// chunkSizes: xorb xA's chunks are 100, 101, 102, … bytes; xB's 1000 each. A term's length is the
// sum of its chunks', as a CAS's plan gives it.
func chunkSize(x hash.Hash, i uint32) int64 {
	if x == xA {
		return 100 + int64(i)
	}
	return 1000
}

func term(x hash.Hash, start, end uint32) casapi.Term {
	n := int64(0)
	for i := start; i < end; i++ {
		n += chunkSize(x, i)
	}
	return casapi.Term{Hash: x, UnpackedLength: uint32(n), Range: casapi.ChunkRange{Start: start, End: end}}
}

func sizesOf(x hash.Hash, n uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(chunkSize(x, uint32(i)))
	}
	return out
}

// bytesOf is the sum of chunkSize over chunks [start, end) of x: the truth the tests compare with.
func bytesOf(x hash.Hash, start, end uint32) int64 { return int64(term(x, start, end).UnpackedLength) }

// compare learns the terms of the plans (and, when chunks, xA's and xB's chunk sizes) and compares
// cur with prev.
func compare(t *testing.T, cur, prev []casapi.Term, chunks bool, more ...[]casapi.Term) Saving {
	t.Helper()
	s := NewSizes()
	for _, ts := range append([][]casapi.Term{cur, prev}, more...) {
		s.LearnTerms(ts)
	}
	if chunks {
		s.LearnChunks(xA, sizesOf(xA, 64))
		s.LearnChunks(xB, sizesOf(xB, 64))
	}
	if s.Conflicts != 0 {
		t.Fatalf("%d conflicting facts in consistent plans", s.Conflicts)
	}
	got, err := Compare(cur, prev, s)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestCompareEmptyPrevious(t *testing.T) {
	cur := []casapi.Term{term(xA, 0, 10), term(xB, 0, 5)}
	got := compare(t, cur, nil, false)
	want := Saving{Shared: 0, New: bytesOf(xA, 0, 10) + bytesOf(xB, 0, 5), Exact: true}
	if got != want {
		t.Errorf("no previous version: %+v, want %+v", got, want)
	}
}

func TestCompareWholeTerms(t *testing.T) {
	// The previous version: xA[0,20). The new one keeps xA[0,8) and xA[12,20) and has xB[0,3) new
	// between them: its terms lie wholly inside or outside the previous one's.
	prev := []casapi.Term{term(xA, 0, 20)}
	cur := []casapi.Term{term(xA, 0, 8), term(xB, 0, 3), term(xA, 12, 20)}
	got := compare(t, cur, prev, false)
	want := Saving{Shared: bytesOf(xA, 0, 8) + bytesOf(xA, 12, 20), New: bytesOf(xB, 0, 3), Exact: true}
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}

// A term that lies partly in the previous version: exact with the chunk sizes (shard cache), or
// with other terms that cut the xorb at the same boundaries; else split by chunk count and marked
// as estimated.
func TestComparePartialTerm(t *testing.T) {
	prev := []casapi.Term{term(xA, 0, 10)}
	cur := []casapi.Term{term(xA, 5, 15)}
	want := Saving{Shared: bytesOf(xA, 5, 10), New: bytesOf(xA, 10, 15), Exact: true}

	if got := compare(t, cur, prev, true); got != want {
		t.Errorf("with chunk sizes: %+v, want %+v", got, want)
	}
	// Another plan (a third version) has xA[0,5): P(5)-P(0) and P(10)-P(0) give [5,10).
	if got := compare(t, cur, prev, false, []casapi.Term{term(xA, 0, 5)}); got != want {
		t.Errorf("with a term xA[0,5) of another plan: %+v, want %+v", got, want)
	}
	got := compare(t, cur, prev, false)
	if got.Exact {
		t.Errorf("without chunk sizes %+v is said to be exact", got)
	}
	total := bytesOf(xA, 5, 15)
	if got.Shared+got.New != total || got.Shared != total/2 {
		t.Errorf("without chunk sizes: %+v, want the term's %d bytes split by chunk count (5 of 10 shared)", got, total)
	}
}

// A term partly in the previous version whose unknown pieces all lie on one side is still exact:
// the estimate only moves bytes between pieces on the same side.
func TestComparePartialTermExactBySide(t *testing.T) {
	prev := []casapi.Term{term(xA, 0, 4), term(xA, 6, 10)}
	cur := []casapi.Term{term(xA, 0, 10)}
	// Known: [0,4), [6,10), [0,10): then [4,6) is too; every piece is exact.
	got := compare(t, cur, prev, false)
	want := Saving{Shared: bytesOf(xA, 0, 4) + bytesOf(xA, 6, 10), New: bytesOf(xA, 4, 6), Exact: true}
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}

// A version that uses chunks twice: each use is shared when the previous version has them, and
// new chunks count once in New.
func TestCompareRepeatedChunks(t *testing.T) {
	prev := []casapi.Term{term(xA, 0, 4)}
	cur := []casapi.Term{term(xA, 0, 4), term(xB, 0, 2), term(xA, 0, 4), term(xB, 0, 2), term(xB, 1, 3)}
	got := compare(t, cur, prev, true)
	want := Saving{Shared: 2 * bytesOf(xA, 0, 4), New: bytesOf(xB, 0, 3), Exact: true}
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	// The same with the previous version using its chunks twice, and overlapping terms.
	prev = []casapi.Term{term(xA, 0, 3), term(xA, 2, 6), term(xA, 0, 3)}
	cur = []casapi.Term{term(xA, 1, 5), term(xA, 4, 8)}
	got = compare(t, cur, prev, true)
	want = Saving{Shared: bytesOf(xA, 1, 5) + bytesOf(xA, 4, 6), New: bytesOf(xA, 6, 8), Exact: true}
	if got != want {
		t.Errorf("overlapping terms: %+v, want %+v", got, want)
	}
}

// The same file twice shares everything; a version on other xorbs shares nothing.
func TestCompareSameAndDisjoint(t *testing.T) {
	v := []casapi.Term{term(xA, 3, 9), term(xB, 0, 4)}
	if got := compare(t, v, v, false); got != (Saving{Shared: bytesOf(xA, 3, 9) + bytesOf(xB, 0, 4), Exact: true}) {
		t.Errorf("same plan: %+v", got)
	}
	if got := compare(t, []casapi.Term{term(xB, 0, 4)}, []casapi.Term{term(xA, 0, 4), term(xB, 4, 8)}, false); got != (Saving{New: bytesOf(xB, 0, 4), Exact: true}) {
		t.Errorf("disjoint plans: %+v", got)
	}
}

// Facts that contradict each other are dropped and counted, in any order; a chunk range past what
// the shard cache lists is one too.
func TestSizesConflicts(t *testing.T) {
	s := NewSizes()
	s.Learn(xA, 0, 4, 400)
	s.Learn(xA, 4, 8, 400)
	if s.Learn(xA, 0, 8, 799) || s.Conflicts != 1 {
		t.Errorf("a contradicting fact was taken (conflicts %d)", s.Conflicts)
	}
	if n, ok := s.Between(xA, 0, 8); !ok || n != 800 {
		t.Errorf("Between(0, 8) = %d, %v; want 800 from the first two facts", n, ok)
	}
	if _, ok := s.Between(xA, 2, 8); ok {
		t.Error("Between(2, 8) known with no fact at 2")
	}
	s.LearnChunks(xA, []uint32{100, 100, 100}) // lists 3 chunks; the facts name 4 and 8
	if s.Conflicts != 3 {
		t.Errorf("conflicts %d, want 3 (the two boundaries past the xorb's listed chunks)", s.Conflicts)
	}
	if s.Learn(xA, 5, 5, 0) || s.Learn(xA, 6, 5, 1) {
		t.Error("an empty or reversed range was taken")
	}
}

// Plans whose long terms overlap so much that cutting them would take quadratic work are refused
// with a message, not compared.
func TestCompareRefusesQuadraticPlans(t *testing.T) {
	var cur []casapi.Term
	for i := uint32(0); i < 3000; i++ {
		cur = append(cur, casapi.Term{Hash: xA, UnpackedLength: 1, Range: casapi.ChunkRange{Start: i, End: i + 3000}})
	}
	_, err := Compare(cur, nil, NewSizes())
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("Compare of %d overlapping terms: %v, want a refusal", len(cur), err)
	}
}

// Random plans over two xorbs, compared with the chunk sizes known, agree with a count chunk by
// chunk; without them every answer said to be exact agrees too, and every range Sizes claims to
// know is right.
func TestCompareAgreesWithChunkCount(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	randomPlan := func() []casapi.Term {
		var ts []casapi.Term
		for range 1 + rnd.IntN(8) {
			x := []hash.Hash{xA, xB}[rnd.IntN(2)]
			s := uint32(rnd.IntN(40))
			ts = append(ts, term(x, s, s+1+uint32(rnd.IntN(20))))
		}
		return ts
	}
	for i := range 2000 {
		cur, prev := randomPlan(), randomPlan()
		if i%5 == 0 {
			prev = nil
		}
		want := chunkByChunk(cur, prev)
		if got := compare(t, cur, prev, true); got != want {
			t.Fatalf("plan %d with chunk sizes: %+v, want %+v\ncur %v\nprev %v", i, got, want, cur, prev)
		}
		s := NewSizes()
		s.LearnTerms(cur)
		s.LearnTerms(prev)
		got, err := Compare(cur, prev, s)
		if err != nil {
			t.Fatal(err)
		}
		if got.Exact && got != want {
			t.Fatalf("plan %d without chunk sizes: %+v said to be exact, want %+v\ncur %v\nprev %v", i, got, want, cur, prev)
		}
		for range 20 {
			x, a := []hash.Hash{xA, xB}[rnd.IntN(2)], uint32(rnd.IntN(60))
			b := a + uint32(rnd.IntN(20))
			if n, ok := s.Between(x, a, b); ok && n != bytesOf(x, a, b) {
				t.Fatalf("Between(%d, %d) = %d, want %d", a, b, n, bytesOf(x, a, b))
			}
		}
	}
}

// chunkByChunk is Compare's answer counted over single chunks.
func chunkByChunk(cur, prev []casapi.Term) Saving {
	type ref struct {
		x hash.Hash
		i uint32
	}
	had := map[ref]bool{}
	for _, t := range prev {
		for i := t.Range.Start; i < t.Range.End; i++ {
			had[ref{t.Hash, i}] = true
		}
	}
	s, counted := Saving{Exact: true}, map[ref]bool{}
	for _, t := range cur {
		for i := t.Range.Start; i < t.Range.End; i++ {
			r := ref{t.Hash, i}
			switch {
			case had[r]:
				s.Shared += chunkSize(t.Hash, i)
			case !counted[r]:
				counted[r] = true
				s.New += chunkSize(t.Hash, i)
			}
		}
	}
	return s
}
