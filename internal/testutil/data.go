package testutil

import (
	"encoding/binary"
	"math/rand/v2"
)

// RandomBytes returns n pseudo-random bytes, the same for the same seed: incompressible test data
// that chunks like real binary files.
func RandomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}
