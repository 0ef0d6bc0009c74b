package xetlog

import (
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Sizes is what is known of the byte sizes of chunk ranges of xorbs. A plan gives each term's
// unpacked length, the bytes of its chunk range [start, end), not the size of each chunk; the shard
// cache (and an embedded store's footers) give chunk sizes, for the xorbs they list.
//
// Each fact says P(end) - P(start) = bytes, where P(i) is the raw offset of chunk i in its xorb.
// Per xorb the facts form a graph on chunk boundaries, kept as a union-find with the offset of
// every boundary from its set's root: the size of any range [a, b) is known exactly when a and b
// are in one set (two terms that start together and end a chunk apart give that chunk's size; a
// term and the parts of it other terms cover give the rest), whatever the order the facts came
// in. A fact that contradicts the known ones (a hostile or broken plan) is counted and dropped.
type Sizes struct {
	xorbs map[hash.Hash]*bounds
	// Conflicts counts the facts dropped for contradicting earlier ones.
	Conflicts int
}

// bounds is one xorb's union-find: parent of each boundary seen, and P(node) - P(parent).
type bounds struct {
	parent map[uint32]uint32
	dist   map[uint32]int64
}

// NewSizes returns an empty Sizes.
func NewSizes() *Sizes { return &Sizes{xorbs: map[hash.Hash]*bounds{}} }

func (s *Sizes) of(x hash.Hash) *bounds {
	b := s.xorbs[x]
	if b == nil {
		b = &bounds{parent: map[uint32]uint32{}, dist: map[uint32]int64{}}
		s.xorbs[x] = b
	}
	return b
}

// find returns the root of n's set and P(n) - P(root), compressing the path.
func (b *bounds) find(n uint32) (uint32, int64) {
	var path []uint32
	root, d := n, int64(0)
	for {
		p, ok := b.parent[root]
		if !ok || p == root {
			break
		}
		path = append(path, root)
		d += b.dist[root]
		root = p
	}
	// Point every node on the path at the root, with its offset from it.
	rest := d
	for _, v := range path {
		next := rest - b.dist[v]
		b.parent[v], b.dist[v] = root, rest
		rest = next
	}
	return root, d
}

// Learn records that chunks [start, end) of xorb x hold n raw bytes. It reports false when the fact
// contradicts what is known (and drops it).
func (s *Sizes) Learn(x hash.Hash, start, end uint32, n int64) bool {
	if end <= start || n < 0 {
		s.Conflicts++
		return false
	}
	b := s.of(x)
	ra, da := b.find(start)
	rb, db := b.find(end)
	if ra == rb {
		if db-da != n {
			s.Conflicts++
			return false
		}
		return true
	}
	// P(rb) - P(ra) = (P(end) - db) - (P(start) - da) = n + da - db.
	b.parent[rb], b.dist[rb] = ra, n+da-db
	if _, ok := b.parent[ra]; !ok {
		b.parent[ra], b.dist[ra] = ra, 0
	}
	return true
}

// LearnTerms records each term's length.
func (s *Sizes) LearnTerms(terms []casapi.Term) {
	for _, t := range terms {
		s.Learn(t.Hash, t.Range.Start, t.Range.End, int64(t.UnpackedLength))
	}
}

// LearnChunks records xorb x's chunk sizes (sizes[i]: chunk i's raw bytes) at the boundaries the
// facts so far name: afterwards any range between them is known. Call it after the terms.
func (s *Sizes) LearnChunks(x hash.Hash, sizes []uint32) {
	b := s.xorbs[x]
	if b == nil || len(sizes) == 0 {
		return
	}
	ends := make([]int64, len(sizes)+1) // ends[i] = P(i)
	for i, n := range sizes {
		ends[i+1] = ends[i] + int64(n)
	}
	for _, n := range nodes(b) {
		if n == 0 {
			continue
		}
		if int(n) >= len(ends) {
			s.Conflicts++ // a plan names chunks past the xorb's last
			continue
		}
		s.Learn(x, 0, n, ends[n])
	}
}

func nodes(b *bounds) []uint32 {
	out := make([]uint32, 0, len(b.parent))
	for n := range b.parent {
		out = append(out, n)
	}
	return out
}

// Between returns the bytes of chunks [a, b) of xorb x when they are known.
func (s *Sizes) Between(x hash.Hash, a, b uint32) (int64, bool) {
	if a == b {
		return 0, true
	}
	bs := s.xorbs[x]
	if bs == nil {
		return 0, false
	}
	if _, ok := bs.parent[a]; !ok {
		return 0, false
	}
	if _, ok := bs.parent[b]; !ok {
		return 0, false
	}
	ra, da := bs.find(a)
	rb, db := bs.find(b)
	if ra != rb {
		return 0, false
	}
	return db - da, true
}
