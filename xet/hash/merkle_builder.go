package hash

// MerkleBuilder computes Merkle (and File) over entries added one at a time, holding O(levels × 9)
// entries instead of the whole list: the grouping rule (nextMergeCut) looks at most 9 entries ahead,
// so each level emits a group as soon as its cut is final — an entry at index ≥ 2 of the pending
// group whose hash % 4 == 0, or 9 pending entries — and passes the node up. Sum flushes what remains
// bottom-up with the same rule. For any sequence of entries, Add each then Sum equals Merkle of the
// sequence and FileSum equals File.
//
// The zero value is ready to use. A MerkleBuilder is not safe for concurrent use.
type MerkleBuilder struct {
	levels []merkleLevel
}

// merkleLevel is one level of the tree being built: the entries not yet grouped, and how many
// entries the level has received in total (a level that received exactly one holds the root).
type merkleLevel struct {
	pending [9]Entry
	n       int
	count   uint64
}

// Add appends the next entry (a chunk, in order).
func (b *MerkleBuilder) Add(e Entry) { b.push(0, e) }

// Len returns how many entries were added.
func (b *MerkleBuilder) Len() uint64 {
	if len(b.levels) == 0 {
		return 0
	}
	return b.levels[0].count
}

// Reset empties the builder for reuse.
func (b *MerkleBuilder) Reset() { b.levels = b.levels[:0] }

func (b *MerkleBuilder) push(l int, e Entry) {
	for len(b.levels) <= l {
		b.levels = append(b.levels, merkleLevel{})
	}
	lv := &b.levels[l]
	lv.pending[lv.n] = e
	lv.n++
	lv.count++
	if (lv.n >= 3 && e.Hash.Mod(4) == 0) || lv.n == len(lv.pending) {
		node := Node(lv.pending[:lv.n])
		lv.n = 0
		b.push(l+1, node)
	}
}

// Sum returns Merkle of the entries added so far. It does not change the builder: more entries may
// be added and Sum called again.
func (b *MerkleBuilder) Sum() Hash {
	var carry, rest []Entry
	for l := 0; ; l++ {
		count := uint64(len(carry))
		rest = rest[:0]
		if l < len(b.levels) {
			lv := &b.levels[l]
			count += lv.count
			rest = append(rest, lv.pending[:lv.n]...)
		}
		rest = append(rest, carry...)
		switch {
		case count == 0:
			return Zero
		case count == 1:
			return rest[0].Hash
		}
		carry = carry[:0:0]
		for i := 0; i < len(rest); {
			cut := nextMergeCut(rest[i:])
			carry = append(carry, Node(rest[i:i+cut]))
			i += cut
		}
	}
}

// FileSum returns File of the entries added so far.
func (b *MerkleBuilder) FileSum() Hash { return b.FileSumWithSalt(Zero) }

// FileSumWithSalt returns FileWithSalt of the entries added so far.
func (b *MerkleBuilder) FileSumWithSalt(salt Hash) Hash {
	if b.Len() == 0 {
		return Zero
	}
	root := b.Sum()
	key := [32]byte(salt)
	return keyedSum(&key, root[:])
}
