package testutil

import "github.com/git-xet-transfer/git-xet-transfer/xet/chunk"

// ChunkBoundaries returns the cumulative end offsets of the chunks of data (a whole file) from a
// plain chunk.Next loop, the in-memory reference for tests of code that chunks streams. Empty ->
// nil.
func ChunkBoundaries(data []byte) []int {
	var out []int
	for pos := 0; pos < len(data); {
		k := chunk.Next(data[pos:])
		if k == 0 {
			k = len(data) - pos
		}
		pos += k
		out = append(out, pos)
	}
	return out
}
