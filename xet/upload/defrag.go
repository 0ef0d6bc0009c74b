package upload

import "math"

// Defragmentation prevention as xet-core does it: a rolling window of the chunk counts of a file's
// last defragWindow ranges (terms). Once the window is full, a dedupe match that does not continue
// the current term is refused when the average chunks per range is below the target and the match
// is shorter than that average; the refused chunks are stored again as new data. The target is
// defragTarget*defragHysteresis while the low threshold is on (initially), defragTarget after a
// refusal; an allowed match at or over the target turns the low threshold back on.
const (
	defragWindow     = 128
	defragTarget     = 8.0
	defragHysteresis = 0.5
)

type defrag struct {
	counts [defragWindow]uint32
	n      int // ranges seen (window full when >= defragWindow)
	head   int // index of the last range in counts
	sum    uint64
	low    bool
}

func newDefrag() defrag { return defrag{low: true, head: -1} }

// newRange records a new range of k chunks.
func (d *defrag) newRange(k uint32) {
	d.head = (d.head + 1) % defragWindow
	if d.n >= defragWindow {
		d.sum -= uint64(d.counts[d.head])
	}
	d.counts[d.head] = k
	d.sum += uint64(k)
	d.n++
}

// grow adds k chunks to the last range.
func (d *defrag) grow(k uint32) {
	if d.head < 0 {
		d.newRange(k)
		return
	}
	d.counts[d.head] += k
	d.sum += uint64(k)
}

// need returns how many chunks a match (not continuing the current term) must reach to be
// allowed: 0 when it is allowed whatever its length.
func (d *defrag) need() int {
	if d.n < defragWindow {
		return 0
	}
	cpr := float64(d.sum) / defragWindow
	target := defragTarget
	if d.low {
		target *= defragHysteresis
	}
	if cpr >= target {
		d.low = true
		return 0
	}
	return int(math.Ceil(cpr))
}

// refused records that a match was refused (the high threshold applies until a match passes).
func (d *defrag) refused() { d.low = false }
