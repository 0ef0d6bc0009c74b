package main

import (
	"encoding/binary"
	"math/bits"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// Mining is fill's main cost: about store.DedupeModulus chunk hashes per indexed chunk, 10^10 of
// them at the default size. A chunk here is 16 bytes, so its hash is one BLAKE3 compression of
// one block, keyed with hash.DataKey; mine computes only that compression and only the output
// word the modulus reads, instead of a general hasher's setup and finalization each time, and
// where it can eight at once (mine_simd_amd64.go). What it finds is checked with hash.Chunk before
// it is written (putShard), so a fault here fails the fill rather than writing fewer entries than
// asked.

// The BLAKE3 constants (its specification, section 2).
var blake3IV = [4]uint32{0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A}

const (
	blake3Flags = 1 | 2 | 8 | 16 // CHUNK_START | CHUNK_END | ROOT | KEYED_HASH
	mineModMask = store.DedupeModulus - 1
)

// A hash's Mod reads its word 3 (bytes 24–31, little-endian), whose low 32 bits are the
// compression's output word 6; the modulus divides 2^32, so that word alone decides.
var _ [0]struct{} = [uint64(1<<32) % store.DedupeModulus]struct{}{}

var dataKeyWords = func() (k [8]uint32) {
	for i := range k {
		k[i] = binary.LittleEndian.Uint32(hash.DataKey[4*i:])
	}
	return k
}()

// mineScalar returns the first counter ≥ from for which the 16-byte chunk (file, counter) is
// indexed (its hash % store.DedupeModulus == 0): mine, one counter at a time.
func mineScalar(file, from uint64) uint64 {
	for c := from; ; c++ {
		if outWord6(uint32(file), uint32(file>>32), uint32(c), uint32(c>>32))&mineModMask == 0 {
			return c
		}
	}
}

// outWord6 is output word 6 of the keyed root compression of the one 16-byte block (m0, m1, m2,
// m3); the block's other twelve words are zero. The rounds are written out (the message schedule
// applied) so that the state stays in registers.
func outWord6(m0, m1, m2, m3 uint32) uint32 {
	k := &dataKeyWords
	v0, v1, v2, v3, v4, v5, v6, v7 := k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]
	v8, v9, v10, v11 := blake3IV[0], blake3IV[1], blake3IV[2], blake3IV[3]
	v12, v13, v14, v15 := uint32(0), uint32(0), uint32(16), uint32(blake3Flags)
	// round 1
	v0, v4, v8, v12 = g(v0, v4, v8, v12, m0, m1)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, m2, m3)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, 0, 0)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, 0, 0)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, 0, 0)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, 0, 0)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, 0, 0)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, 0, 0)
	// round 2
	v0, v4, v8, v12 = g(v0, v4, v8, v12, m2, 0)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, m3, 0)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, 0, m0)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, 0, 0)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, m1, 0)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, 0, 0)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, 0, 0)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, 0, 0)
	// round 3
	v0, v4, v8, v12 = g(v0, v4, v8, v12, m3, 0)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, 0, 0)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, 0, m2)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, 0, 0)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, 0, 0)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, 0, m0)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, 0, 0)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, 0, m1)
	// round 4
	v0, v4, v8, v12 = g(v0, v4, v8, v12, 0, 0)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, 0, 0)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, 0, m3)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, 0, 0)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, 0, m0)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, 0, m2)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, 0, 0)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, m1, 0)
	// round 5
	v0, v4, v8, v12 = g(v0, v4, v8, v12, 0, 0)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, 0, 0)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, 0, 0)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, 0, 0)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, 0, m2)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, 0, m3)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, m0, m1)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, 0, 0)
	// round 6
	v0, v4, v8, v12 = g(v0, v4, v8, v12, 0, 0)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, 0, 0)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, 0, 0)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, 0, m1)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, 0, m3)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, m0, 0)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, m2, 0)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, 0, 0)
	// round 7
	_, v4, _, v12 = g(v0, v4, v8, v12, 0, 0)
	v1, _, v9, _ = g(v1, v5, v9, v13, 0, m0)
	_, v6, _, v14 = g(v2, v6, v10, v14, m1, 0)
	v3, _, v11, _ = g(v3, v7, v11, v15, 0, 0)
	// the last diagonal step: only the two quarter-rounds that write v6 and v14
	_, v6, _, _ = g(v1, v6, v11, v12, m2, 0)
	_, _, _, v14 = g(v3, v4, v9, v14, 0, 0)
	return v6 ^ v14
}

// g is BLAKE3's quarter-round.
func g(a, b, c, d, x, y uint32) (uint32, uint32, uint32, uint32) {
	a += b + x
	d = bits.RotateLeft32(d^a, -16)
	c += d
	b = bits.RotateLeft32(b^c, -12)
	a += b + y
	d = bits.RotateLeft32(d^a, -8)
	c += d
	b = bits.RotateLeft32(b^c, -7)
	return a, b, c, d
}
