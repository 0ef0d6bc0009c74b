// Package chunk splits data into Xet's content-defined chunks: the gearhash chunker of xet-core
// (target 64 KiB, minimum 8 KiB, maximum 128 KiB), byte for byte the same boundaries.
//
// The boundary rule: within the current chunk, after consuming its L-th byte, the rolling hash
// h = 2h + Gear[b] (mod 2^64) is tested; the chunk ends there when L >= MinSize and h&Mask == 0, or
// when L == MaxSize. h restarts at every boundary. Because h depends only on the last 64 bytes, the
// chunker starts hashing 64 bytes before MinSize and skips the first bytes of each chunk.
//
// Next and Boundaries work on data in memory; Reader streams an io.Reader and hashes the chunks
// ahead on a goroutine; Summarize gives a whole stream's chunk list, Xet file hash and SHA-256.
package chunk

// Chunk size parameters of xet-core (TARGET, MIN = TARGET/8, MAX = TARGET*2).
const (
	MinSize    = 8192
	TargetSize = 65536
	MaxSize    = 131072
)

// Mask selects the bits of the rolling hash that must all be zero at a boundary:
// (TargetSize-1) shifted to the top of the word.
const Mask uint64 = 0xFFFF000000000000

// window is the number of trailing bytes the rolling hash depends on (the hash shifts one bit per byte).
const window = 64

// Next returns the length of the first chunk of data (data starts at a chunk boundary): a cut
// 0 < n <= MaxSize when one is found, or 0 when data has no boundary and len(data) < MaxSize (the
// caller needs more data; at EOF the rest is the last chunk).
func Next(data []byte) int { return nextFrom(data, 0) }

// nextFrom is Next for data whose first done bytes are already known to hold no boundary (no cut
// at any length <= done). It hashes only the 64 bytes before the first length it still has to test.
func nextFrom(data []byte, done int) int {
	end := min(len(data), MaxSize)
	first := max(MinSize, done+1) // the first chunk length to test
	if first <= end {
		// Warm up on the 63 bytes before byte first-1; the state then equals the one a
		// from-the-start hash would have, since older bytes have been shifted out.
		var h uint64
		for _, b := range data[first-window : first-1] {
			h = h + h + Gear[b]
		}
		if k := scan(data[first-1:end], h); k > 0 {
			return first - 1 + k
		}
	}
	if len(data) >= MaxSize {
		return MaxSize
	}
	return 0
}

// scan continues the rolling hash h over data and returns the index just past the first byte after
// which h&Mask == 0, or 0 when there is none. It is the chunker's hot loop: a leaf kept out of line
// so that h and the index stay in registers (h = h + h + Gear[b] is one LEA), unrolled 8 times
// (faster than 4 times or a plain range loop: BenchmarkNext).
//
//go:noinline
func scan(data []byte, h uint64) int {
	i := 0
	for ; i+8 <= len(data); i += 8 {
		d := data[i : i+8 : i+8]
		h = h + h + Gear[d[0]]
		if h&Mask == 0 {
			return i + 1
		}
		h = h + h + Gear[d[1]]
		if h&Mask == 0 {
			return i + 2
		}
		h = h + h + Gear[d[2]]
		if h&Mask == 0 {
			return i + 3
		}
		h = h + h + Gear[d[3]]
		if h&Mask == 0 {
			return i + 4
		}
		h = h + h + Gear[d[4]]
		if h&Mask == 0 {
			return i + 5
		}
		h = h + h + Gear[d[5]]
		if h&Mask == 0 {
			return i + 6
		}
		h = h + h + Gear[d[6]]
		if h&Mask == 0 {
			return i + 7
		}
		h = h + h + Gear[d[7]]
		if h&Mask == 0 {
			return i + 8
		}
	}
	for ; i < len(data); i++ {
		h = h + h + Gear[data[i]]
		if h&Mask == 0 {
			return i + 1
		}
	}
	return 0
}
