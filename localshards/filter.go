package localshards

// filter is a split-block Bloom filter in front of a segment's table: a key the filter rejects is
// certainly not in the segment, so the common miss (new data on a first push) costs one access to a
// block of the filter, about 1 byte per entry and mostly cache-resident, instead of a DRAM access
// into the table (about 15 bytes per entry). It never rejects a key that was added (no false
// negatives); a key it accepts may still be absent (a false positive, about 2-3% at 8 bits per
// entry), and then the table decides.
//
// Each key maps to one 64-byte block (eight u64 words, one cache line): block(k) = (k>>32)·nb >> 32
// uses the key's high bits, like the table's bucket function, so a segment's keys, stored in bucket
// order, fill the filter in one sequential sweep. Within the block the key sets one bit in each of the
// eight words, at positions taken from a 64-bit mix of the whole key (so they do not depend on the
// block choice alone). A probe reads the one line and tests the eight bits without branches.
type filter struct {
	nb     uint64 // blocks
	blocks []filterBlock
}

type filterBlock [8]uint64

const (
	// filterBitsPerKey: 8 bits per entry, about 2-3% false positives.
	filterBitsPerKey = 8
	// minFilterSlots: segments with fewer slots (512 KiB of keys) stay in cache anyway and get no
	// filter (probing one would add work, not save a memory access).
	minFilterSlots = 1 << 16
)

// newFilter returns an empty filter sized for n keys.
func newFilter(n int) *filter {
	nb := (uint64(n)*filterBitsPerKey + 511) / 512
	nb = min(max(nb, 1), 1<<31)
	f := &filter{nb: nb, blocks: make([]filterBlock, nb)}
	adviseHuge(f.blocks)
	return f
}

// filterMix is a 64-bit finaliser (murmur3's fmix64): every output bit depends on every key bit.
func filterMix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

func (f *filter) block(k uint64) *filterBlock { return &f.blocks[((k>>32)*f.nb)>>32] }

// add records key.
func (f *filter) add(k uint64) {
	b := f.block(k)
	m := filterMix(k)
	b[0] |= 1 << (m & 63)
	b[1] |= 1 << (m >> 6 & 63)
	b[2] |= 1 << (m >> 12 & 63)
	b[3] |= 1 << (m >> 18 & 63)
	b[4] |= 1 << (m >> 24 & 63)
	b[5] |= 1 << (m >> 30 & 63)
	b[6] |= 1 << (m >> 36 & 63)
	b[7] |= 1 << (m >> 42 & 63)
}

// mayContain reports whether key may have been added: false means it certainly was not.
func (f *filter) mayContain(k uint64) bool {
	b := f.block(k)
	m := filterMix(k)
	missing := ^b[0]&(1<<(m&63)) | ^b[1]&(1<<(m>>6&63)) | ^b[2]&(1<<(m>>12&63)) | ^b[3]&(1<<(m>>18&63)) |
		^b[4]&(1<<(m>>24&63)) | ^b[5]&(1<<(m>>30&63)) | ^b[6]&(1<<(m>>36&63)) | ^b[7]&(1<<(m>>42&63))
	return missing == 0
}

// buildFilter returns the filter of s's entries, or nil when s is too small to need one. The table
// is in bucket order, so the blocks are written in ascending order (a sequential sweep). emptyKey is
// always added (empty slots hold it, and a real key may equal it); it then passes the filter, which
// is harmless (the table still answers).
func buildFilter(s *segment) *filter {
	if len(s.keys) < minFilterSlots {
		return nil
	}
	f := newFilter(s.n)
	for _, k := range s.keys {
		if k != emptyKey {
			f.add(k)
		}
	}
	f.add(emptyKey)
	return f
}
