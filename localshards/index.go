package localshards

// segment is an immutable chunk index: a table of slots holding truncated chunk hashes (keys) and
// refs, laid out so that a probe touches one cache line of keys in the common case and never a
// second, dependent array (on this kind of machine a dependent DRAM miss costs up to a microsecond).
//
// Key k belongs to bucket b(k) = (k>>32)·nb >> 32, which is monotone in k; bucket b owns slots
// [8b, 8b+8). Entries are stored in bucket order, each at max(8·b, the slot after the previous
// entry), so a bucket's entries are contiguous and start at or after 8b, displaced only by the
// spill of earlier buckets. A probe scans from slot 8b: entries of earlier buckets are skipped,
// entries of bucket b compared, and the first entry of a later bucket ends it. Unused slots hold
// emptyKey (the last bucket, so they end every other probe) with ref noRef, which resolves to no
// xorb. With nb chosen for a load of about 0.8, memory is about 15 bytes per entry (u64 key, u32
// ref). Duplicate keys (one chunk in several xorbs or shards) are kept.
//
// A ref is a global chunk number of the Cache (see xorbInfo); refs are only resolved on a key match.
//
// A segment of at least minFilterSlots slots has a Bloom filter of its keys (filter.go), consulted
// before the table at the start of a probe, so most misses never touch the table.
type segment struct {
	nb     uint64   // buckets
	keys   []uint64 // slots
	refs   []uint32
	n      int     // entries (non-empty slots)
	filter *filter // nil for small segments
}

const (
	slotsPerBucket = 8 // one 64-byte line of keys
	emptyKey       = ^uint64(0)
	noRef          = ^uint32(0)
	// loadNum/loadDen: target entries per slot.
	loadNum, loadDen = 4, 5
)

func (s *segment) len() int { return s.n }

// bucket returns b(k).
func (s *segment) bucket(k uint64) uint64 { return ((k >> 32) * s.nb) >> 32 }

// candidates returns the first slot at or after from (0: the start of key's probe) holding key, or
// -1. Pass the previous result + 1 to get the next one. Empty slots never match. A probe's start
// (from 0) asks the filter first.
//
// Slots are compared eight at a time without branches (x^key is zero only for a match), so the only
// branches in the common miss are "no match in this line" and "bucket ends in this line", both well
// predicted; the CPU can then run ahead into the next lookup while this one's memory load is pending.
func (s *segment) candidates(key uint64, from int) int {
	if from == 0 && s.filter != nil && !s.filter.mayContain(key) {
		return -1
	}
	b := s.bucket(key)
	i := max(int(b)*slotsPerBucket, from)
	keys := s.keys
	for i+slotsPerBucket <= len(keys) {
		l := (*[slotsPerBucket]uint64)(keys[i : i+slotsPerBucket])
		all := nonzero(l[0]^key) & nonzero(l[1]^key) & nonzero(l[2]^key) & nonzero(l[3]^key) &
			nonzero(l[4]^key) & nonzero(l[5]^key) & nonzero(l[6]^key) & nonzero(l[7]^key)
		if all == 0 { // some slot matches
			for j, k := range l {
				if k == key && s.refs[i+j] != noRef {
					return i + j
				}
			}
		}
		if s.bucket(l[slotsPerBucket-1]) > b {
			return -1
		}
		i += slotsPerBucket
	}
	for ; i < len(keys); i++ {
		if keys[i] == key && s.refs[i] != noRef {
			return i
		}
		if s.bucket(keys[i]) > b {
			return -1
		}
	}
	return -1
}

// nonzero returns 1 when x != 0, else 0, without a branch.
func nonzero(x uint64) uint64 { return (x | -x) >> 63 }

// numBuckets returns nb for n entries: n / (8 · load), at least 1, below 2^31.
func numBuckets(n int) uint64 {
	nb := (uint64(n)*loadDen/loadNum + slotsPerBucket - 1) / slotsPerBucket
	return min(max(nb, 1), 1<<31-1)
}

// buildSegment builds a segment of keys/refs (equal length, any order). It takes ownership of both
// slices (they are dropped once the table is built).
//
// Two passes: partition the entries by their top 8 bits into a scratch copy (256 sequential write
// streams), then, partition by partition (each small enough to stay in cache, and covering a
// contiguous range of buckets since b(k) is monotone), count the entries per bucket, turn the counts
// into slot positions, and scatter the entries straight into the table. Within a bucket the order is
// irrelevant, so no sorting is needed even for skewed keys.
func buildSegment(keys []uint64, refs []uint32) *segment {
	n := len(keys)
	s := &segment{nb: numBuckets(n), n: n}
	starts, sk, sr := partitionByTopByte(keys, refs)
	minSlots := int(s.nb * slotsPerBucket)
	t := &tableBuilder{s: s, keys: make([]uint64, minSlots+n/64+slotsPerBucket)}
	t.refs = make([]uint32, len(t.keys))
	adviseHuge(t.keys)
	adviseHuge(t.refs)
	for p := 0; p < topParts; p++ {
		if lo, hi := starts[p], starts[p+1]; lo < hi {
			t.place(p, sk[lo:hi], sr[lo:hi])
		}
	}
	t.pad(max(t.at, minSlots))
	s.keys, s.refs = t.keys[:t.at:t.at], t.refs[:t.at:t.at]
	s.filter = buildFilter(s)
	return s
}

// topParts: buildSegment's first pass partitions the entries by their top 8 bits.
const topParts = 256

// partitionByTopByte copies keys and refs into sk and sr grouped by the keys' top 8 bits: partition
// p is sk[starts[p]:starts[p+1]].
func partitionByTopByte(keys []uint64, refs []uint32) (starts [topParts + 1]uint32, sk []uint64, sr []uint32) {
	for _, k := range keys {
		starts[(k>>56)+1]++
	}
	for i := 1; i <= topParts; i++ {
		starts[i] += starts[i-1]
	}
	pos := starts
	sk = make([]uint64, len(keys))
	sr = make([]uint32, len(keys))
	for i, k := range keys {
		j := pos[k>>56]
		pos[k>>56]++
		sk[j], sr[j] = k, refs[i]
	}
	return starts, sk, sr
}

// tableBuilder fills the slots of segment s's table, partition after partition.
type tableBuilder struct {
	s    *segment
	keys []uint64
	refs []uint32
	at   int      // the next free slot
	cnt  []uint32 // per bucket of the partition being placed (reused)
}

// place scatters partition p (keys pk, refs pr) into the table: it counts the entries per
// bucket, turns the counts into slot positions (each bucket starting at its home slot or after the
// previous bucket's entries, the slots skipped marked empty; the table grows when the entries
// spill past its end), and writes each entry at its bucket's next slot.
func (t *tableBuilder) place(p int, pk []uint64, pr []uint32) {
	s := t.s
	b0 := s.bucket(uint64(p) << 56)
	b1 := s.bucket(uint64(p)<<56 | (1<<56 - 1))
	if need := int(b1 - b0 + 1); cap(t.cnt) >= need {
		t.cnt = t.cnt[:need]
		clear(t.cnt)
	} else {
		t.cnt = make([]uint32, need)
	}
	cnt := t.cnt
	for _, k := range pk {
		cnt[s.bucket(k)-b0]++
	}
	for j, c := range cnt {
		if c == 0 {
			continue
		}
		first := max(t.at, int(b0+uint64(j))*slotsPerBucket)
		t.pad(first)
		cnt[j] = uint32(first)
		t.at = first + int(c)
		if t.at > len(t.keys) { // spill past the guess: grow (rare)
			grow := t.at - len(t.keys) + len(t.keys)/8
			t.keys = append(t.keys, make([]uint64, grow)...)
			t.refs = append(t.refs, make([]uint32, grow)...)
		}
	}
	for i, k := range pk {
		j := s.bucket(k) - b0
		d := cnt[j]
		cnt[j]++
		t.keys[d], t.refs[d] = k, pr[i]
	}
}

// pad marks the slots from the next free one up to end empty.
func (t *tableBuilder) pad(end int) {
	for ; t.at < end; t.at++ {
		t.keys[t.at], t.refs[t.at] = emptyKey, noRef
	}
}
