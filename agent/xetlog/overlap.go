package xetlog

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Saving is what one version of a file has in common with its previous version, at chunk level:
// the chunks of both are the (xorb, chunk index) pairs their plans' terms name.
type Saving struct {
	// Shared is the bytes of the version that lie in chunks the previous version also references,
	// each time the version uses them.
	Shared int64
	// New is the bytes of the distinct chunks of the version that the previous version does not
	// reference: what the version costs on top of it (a chunk the version uses twice counts once,
	// so Shared + New is below the size when the version repeats itself).
	New int64
	// Exact is false when a term lies partly in the previous version and the sizes of its chunks on
	// either side were not known (see Sizes): its bytes were split by chunk count.
	Exact bool
}

// MaxPieces bounds the work of one Compare: the pieces the terms are cut into at the boundaries of
// both versions' terms on their xorbs. Real plans cut each term a few times; a plan of many long
// overlapping terms would cut them quadratically, and is refused instead.
const MaxPieces = 1 << 22

// piece is the part [start, end) of a term between two cut points of its xorb.
type piece struct {
	start, end uint32
	inPrev     bool
}

// Compare measures cur's terms against prev's (nil: no previous version), with the chunk sizes
// sizes knows (which must include cur's terms: LearnTerms). An error names a plan it cannot
// compare.
func Compare(cur, prev []casapi.Term, sizes *Sizes) (Saving, error) {
	had := spans(prev)
	cuts := cutPoints(cur, had)
	if n := countPieces(cur, cuts); n > MaxPieces {
		return Saving{}, fmt.Errorf("the plans' %d terms cut into %d pieces (at most %d): refusing to compare them", len(cur)+len(prev), n, MaxPieces)
	}
	s := Saving{Exact: true}
	seen := map[pieceKey]bool{}
	for _, t := range cur {
		if t.Range.End <= t.Range.Start {
			return Saving{}, fmt.Errorf("a term of xorb %s has chunk range %d-%d", t.Hash, t.Range.Start, t.Range.End)
		}
		ps := split(t, cuts[t.Hash], had[t.Hash])
		bytes, known, exact := pieceSizes(t, ps, sizes)
		s.Exact = s.Exact && exact
		for i, p := range ps {
			k := pieceKey{t.Hash, p.start, p.end}
			switch {
			case p.inPrev:
				s.Shared += bytes[i]
			case !seen[k]:
				seen[k] = true
				s.New += bytes[i]
			case !known[i]:
				// Counted once although used again: New is exact only when the size of what is
				// left out is, not just the term's total.
				s.Exact = false
			}
		}
	}
	return s, nil
}

type pieceKey struct {
	x          hash.Hash
	start, end uint32
}

// spans are the chunk ranges each xorb's terms cover, sorted and merged.
func spans(terms []casapi.Term) map[hash.Hash][]casapi.ChunkRange {
	out := map[hash.Hash][]casapi.ChunkRange{}
	for _, t := range terms {
		if t.Range.End > t.Range.Start {
			out[t.Hash] = append(out[t.Hash], t.Range)
		}
	}
	for x, rs := range out {
		slices.SortFunc(rs, func(a, b casapi.ChunkRange) int { return cmp.Compare(a.Start, b.Start) })
		merged := rs[:1]
		for _, r := range rs[1:] {
			last := &merged[len(merged)-1]
			if r.Start <= last.End {
				last.End = max(last.End, r.End)
				continue
			}
			merged = append(merged, r)
		}
		out[x] = merged
	}
	return out
}

// cutPoints are, per xorb of cur, the boundaries of cur's terms and of the previous version's
// spans, sorted and distinct: cut there, two pieces of cur's terms are either the same or apart,
// and each lies wholly in or out of the previous version.
func cutPoints(cur []casapi.Term, had map[hash.Hash][]casapi.ChunkRange) map[hash.Hash][]uint32 {
	out := map[hash.Hash][]uint32{}
	for _, t := range cur {
		out[t.Hash] = append(out[t.Hash], t.Range.Start, t.Range.End)
	}
	for x, cs := range out {
		for _, r := range had[x] {
			cs = append(cs, r.Start, r.End)
		}
		slices.Sort(cs)
		out[x] = slices.Compact(cs)
	}
	return out
}

// countPieces is how many pieces the terms are cut into.
func countPieces(cur []casapi.Term, cuts map[hash.Hash][]uint32) int {
	n := 0
	for _, t := range cur {
		cs := cuts[t.Hash]
		lo, _ := slices.BinarySearch(cs, t.Range.Start)
		hi, _ := slices.BinarySearch(cs, t.Range.End)
		n += max(hi-lo, 1)
	}
	return n
}

// split cuts term t at the cut points inside it, marking the pieces the previous version's spans
// (had, merged) cover.
func split(t casapi.Term, cuts []uint32, had []casapi.ChunkRange) []piece {
	lo, _ := slices.BinarySearch(cuts, t.Range.Start)
	hi, _ := slices.BinarySearch(cuts, t.Range.End)
	var ps []piece
	h := 0
	for i := lo; i < hi; i++ {
		p := piece{start: cuts[i], end: cuts[i+1]}
		for h < len(had) && had[h].End <= p.start {
			h++
		}
		p.inPrev = h < len(had) && had[h].Start <= p.start && p.end <= had[h].End
		ps = append(ps, p)
	}
	return ps
}

// pieceSizes are the bytes of each piece of term t: exact where sizes knows them (known); the rest
// of the term's length shared among the others by chunk count. exact is false when that estimate
// decides how the term's bytes divide between the previous version and the new ones (the unknown
// pieces lie on both sides).
func pieceSizes(t casapi.Term, ps []piece, sizes *Sizes) (bytes []int64, known []bool, exact bool) {
	bytes = make([]int64, len(ps))
	known = make([]bool, len(ps))
	rest, unknownChunks := int64(t.UnpackedLength), int64(0)
	var in, out bool
	for i, p := range ps {
		if n, ok := sizes.Between(t.Hash, p.start, p.end); ok && n >= 0 {
			bytes[i], known[i] = n, true
			rest -= n
			continue
		}
		unknownChunks += int64(p.end - p.start)
		in, out = in || p.inPrev, out || !p.inPrev
	}
	rest = max(rest, 0)
	last := -1
	for i, p := range ps {
		if !known[i] {
			bytes[i] = rest * int64(p.end-p.start) / unknownChunks
			last = i
		}
	}
	if last >= 0 { // the rounding's remainder
		sum := int64(0)
		for i := range ps {
			if !known[i] {
				sum += bytes[i]
			}
		}
		bytes[last] += rest - sum
	}
	return bytes, known, !(in && out)
}
