//go:build goexperiment.simd && amd64

package main

import (
	"math/bits"
	"simd/archsimd"
)

// With GOEXPERIMENT=simd on a CPU with AVX2 (test/scale-server.sh builds so), mine tries eight
// counters at once, one per 32-bit lane: outWord6's compression, eight lanes wide. The scalar
// mineScalar stays the reference (TestMineFindsTheFirstIndexedChunk checks both against hash.Chunk).

var haveAVX2 = archsimd.X86.AVX2()

// mine returns the first counter ≥ from for which the 16-byte chunk (file, counter) is
// indexed (its hash % store.DedupeModulus == 0).
func mine(file, from uint64) uint64 {
	if !haveAVX2 {
		return mineScalar(file, from)
	}
	m0 := archsimd.BroadcastUint32x8(uint32(file))
	m1 := archsimd.BroadcastUint32x8(uint32(file >> 32))
	mask, zero := archsimd.BroadcastUint32x8(mineModMask), archsimd.BroadcastUint32x8(0)
	lanes := archsimd.LoadUint32x8(&[8]uint32{0, 1, 2, 3, 4, 5, 6, 7})
	for c := from; ; c += 8 {
		if uint32(c) > 1<<32-8 { // the eight lanes would not share the counter's high word
			return mineScalar(file, c)
		}
		lo := archsimd.BroadcastUint32x8(uint32(c)).Add(lanes)
		hit := outWord6x8(m0, m1, lo, archsimd.BroadcastUint32x8(uint32(c>>32))).And(mask).Equal(zero).ToBits()
		if hit != 0 {
			return c + uint64(bits.TrailingZeros8(hit))
		}
	}
}

type vec = archsimd.Uint32x8

// The quarter-round's constants, set only where AVX2 is (their loads are AVX2 instructions):
// the byte shuffles that rotate each 32-bit word right by 16 and by 8 (within each 128-bit lane),
// and the counts of the right shifts of the rotations by 12 and 7, one per lane. (Go 1.26 compiles
// a shift of every lane by one count to the form that takes the count from a register, moved
// there each time; that made the whole compression 2.6 times slower.)
var rot16, rot8, sh12, sh7 vec

func init() {
	if !haveAVX2 {
		return
	}
	rot16 = archsimd.LoadInt8x32(&[32]int8{2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
		2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13}).AsUint32x8()
	rot8 = archsimd.LoadInt8x32(&[32]int8{1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12,
		1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12}).AsUint32x8()
	sh12, sh7 = archsimd.BroadcastUint32x8(12), archsimd.BroadcastUint32x8(7)
}

// outWord6x8 is outWord6 of eight blocks, lane by lane (transcribed from it line by line); the quarter-rounds
// are named for the message words they add: gxy both, gx0 the first, g0y the second, g00 none.
func outWord6x8(m0, m1, m2, m3 vec) vec {
	k := &dataKeyWords
	b := archsimd.BroadcastUint32x8
	v0, v1, v2, v3, v4, v5, v6, v7 := b(k[0]), b(k[1]), b(k[2]), b(k[3]), b(k[4]), b(k[5]), b(k[6]), b(k[7])
	v8, v9, v10, v11 := b(blake3IV[0]), b(blake3IV[1]), b(blake3IV[2]), b(blake3IV[3])
	v12, v13, v14, v15 := b(0), b(0), b(16), b(blake3Flags)
	// round 1
	v0, v4, v8, v12 = gxy(v0, v4, v8, v12, m0, m1)
	v1, v5, v9, v13 = gxy(v1, v5, v9, v13, m2, m3)
	v2, v6, v10, v14 = g00(v2, v6, v10, v14)
	v3, v7, v11, v15 = g00(v3, v7, v11, v15)
	v0, v5, v10, v15 = g00(v0, v5, v10, v15)
	v1, v6, v11, v12 = g00(v1, v6, v11, v12)
	v2, v7, v8, v13 = g00(v2, v7, v8, v13)
	v3, v4, v9, v14 = g00(v3, v4, v9, v14)
	// round 2
	v0, v4, v8, v12 = gx0(v0, v4, v8, v12, m2)
	v1, v5, v9, v13 = gx0(v1, v5, v9, v13, m3)
	v2, v6, v10, v14 = g0y(v2, v6, v10, v14, m0)
	v3, v7, v11, v15 = g00(v3, v7, v11, v15)
	v0, v5, v10, v15 = gx0(v0, v5, v10, v15, m1)
	v1, v6, v11, v12 = g00(v1, v6, v11, v12)
	v2, v7, v8, v13 = g00(v2, v7, v8, v13)
	v3, v4, v9, v14 = g00(v3, v4, v9, v14)
	// round 3
	v0, v4, v8, v12 = gx0(v0, v4, v8, v12, m3)
	v1, v5, v9, v13 = g00(v1, v5, v9, v13)
	v2, v6, v10, v14 = g0y(v2, v6, v10, v14, m2)
	v3, v7, v11, v15 = g00(v3, v7, v11, v15)
	v0, v5, v10, v15 = g00(v0, v5, v10, v15)
	v1, v6, v11, v12 = g0y(v1, v6, v11, v12, m0)
	v2, v7, v8, v13 = g00(v2, v7, v8, v13)
	v3, v4, v9, v14 = g0y(v3, v4, v9, v14, m1)
	// round 4
	v0, v4, v8, v12 = g00(v0, v4, v8, v12)
	v1, v5, v9, v13 = g00(v1, v5, v9, v13)
	v2, v6, v10, v14 = g0y(v2, v6, v10, v14, m3)
	v3, v7, v11, v15 = g00(v3, v7, v11, v15)
	v0, v5, v10, v15 = g0y(v0, v5, v10, v15, m0)
	v1, v6, v11, v12 = g0y(v1, v6, v11, v12, m2)
	v2, v7, v8, v13 = g00(v2, v7, v8, v13)
	v3, v4, v9, v14 = gx0(v3, v4, v9, v14, m1)
	// round 5
	v0, v4, v8, v12 = g00(v0, v4, v8, v12)
	v1, v5, v9, v13 = g00(v1, v5, v9, v13)
	v2, v6, v10, v14 = g00(v2, v6, v10, v14)
	v3, v7, v11, v15 = g00(v3, v7, v11, v15)
	v0, v5, v10, v15 = g0y(v0, v5, v10, v15, m2)
	v1, v6, v11, v12 = g0y(v1, v6, v11, v12, m3)
	v2, v7, v8, v13 = gxy(v2, v7, v8, v13, m0, m1)
	v3, v4, v9, v14 = g00(v3, v4, v9, v14)
	// round 6
	v0, v4, v8, v12 = g00(v0, v4, v8, v12)
	v1, v5, v9, v13 = g00(v1, v5, v9, v13)
	v2, v6, v10, v14 = g00(v2, v6, v10, v14)
	v3, v7, v11, v15 = g0y(v3, v7, v11, v15, m1)
	v0, v5, v10, v15 = g0y(v0, v5, v10, v15, m3)
	v1, v6, v11, v12 = gx0(v1, v6, v11, v12, m0)
	v2, v7, v8, v13 = gx0(v2, v7, v8, v13, m2)
	v3, v4, v9, v14 = g00(v3, v4, v9, v14)
	// round 7
	_, v4, _, v12 = g00(v0, v4, v8, v12)
	v1, _, v9, _ = g0y(v1, v5, v9, v13, m0)
	_, v6, _, v14 = gx0(v2, v6, v10, v14, m1)
	v3, _, v11, _ = g00(v3, v7, v11, v15)
	// the last diagonal step: only the two quarter-rounds that write v6 and v14
	_, v6, _, _ = gx0(v1, v6, v11, v12, m2)
	_, _, _, v14 = g00(v3, v4, v9, v14)
	return v6.Xor(v14)
}

func gxy(a, b, c, d, x, y vec) (vec, vec, vec, vec) {
	a, b, c, d = gA(a.Add(x), b, c, d)
	return gB0(a.Add(y), b, c, d)
}

func gx0(a, b, c, d, x vec) (vec, vec, vec, vec) { return gB0(gA(a.Add(x), b, c, d)) }

func g0y(a, b, c, d, y vec) (vec, vec, vec, vec) {
	a, b, c, d = gA(a, b, c, d)
	return gB0(a.Add(y), b, c, d)
}

func g00(a, b, c, d vec) (vec, vec, vec, vec) { return gB0(gA(a, b, c, d)) }

// gA is the quarter-round's first half: a += b (+ x, added by the caller), then d, c, b.
func gA(a, b, c, d vec) (vec, vec, vec, vec) {
	a = a.Add(b)
	d = d.Xor(a).AsUint8x32().PermuteOrZeroGrouped(rot16.AsInt8x32()).AsUint32x8()
	c = c.Add(d)
	b = b.Xor(c)
	b = b.ShiftRight(sh12).Or(b.ShiftAllLeft(20))
	return a, b, c, d
}

// gB0 is its second half: a += b (+ y, added by the caller), then d, c, b.
func gB0(a, b, c, d vec) (vec, vec, vec, vec) {
	a = a.Add(b)
	d = d.Xor(a).AsUint8x32().PermuteOrZeroGrouped(rot8.AsInt8x32()).AsUint32x8()
	c = c.Add(d)
	b = b.Xor(c)
	b = b.ShiftRight(sh7).Or(b.ShiftAllLeft(25))
	return a, b, c, d
}
