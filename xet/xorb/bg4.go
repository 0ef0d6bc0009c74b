package xorb

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// BG4Split appends the byte-grouped form of src to dst: the bytes at positions i%4 == 0, then 1, 2,
// 3. When len(src) is not a multiple of 4 the first len%4 groups are one byte longer.
func BG4Split(dst, src []byte) []byte {
	n := len(src)
	at := len(dst)
	dst = slices.Grow(dst, n)[:at+n]
	out := dst[at:]
	q, r := n/4, n%4
	// Group k starts after the groups before it; the first r groups have q+1 bytes.
	g0 := out[0 : q+b2i(r > 0)]
	g1 := out[len(g0) : len(g0)+q+b2i(r > 1)]
	g2 := out[len(g0)+len(g1) : len(g0)+len(g1)+q+b2i(r > 2)]
	g3 := out[len(g0)+len(g1)+len(g2):]
	// 16 input bytes (4 per group) per step: two 64-bit loads, four 32-bit stores.
	i := 0
	for ; i+4 <= q; i += 4 {
		a := binary.LittleEndian.Uint64(src[4*i:])
		b := binary.LittleEndian.Uint64(src[4*i+8:])
		binary.LittleEndian.PutUint32(g0[i:], uint32(a&0xFF|a>>24&0xFF00)|uint32(b&0xFF|b>>24&0xFF00)<<16)
		a, b = a>>8, b>>8
		binary.LittleEndian.PutUint32(g1[i:], uint32(a&0xFF|a>>24&0xFF00)|uint32(b&0xFF|b>>24&0xFF00)<<16)
		a, b = a>>8, b>>8
		binary.LittleEndian.PutUint32(g2[i:], uint32(a&0xFF|a>>24&0xFF00)|uint32(b&0xFF|b>>24&0xFF00)<<16)
		a, b = a>>8, b>>8
		binary.LittleEndian.PutUint32(g3[i:], uint32(a&0xFF|a>>24&0xFF00)|uint32(b&0xFF|b>>24&0xFF00)<<16)
	}
	for ; i < q; i++ {
		w := src[4*i : 4*i+4 : 4*i+4]
		g0[i], g1[i], g2[i], g3[i] = w[0], w[1], w[2], w[3]
	}
	tail := src[4*q:]
	if r > 0 {
		g0[q] = tail[0]
	}
	if r > 1 {
		g1[q] = tail[1]
	}
	if r > 2 {
		g2[q] = tail[2]
	}
	return dst
}

// BG4Regroup appends the inverse of BG4Split(src) to dst.
func BG4Regroup(dst, src []byte) []byte {
	n := len(src)
	at := len(dst)
	dst = slices.Grow(dst, n)[:at+n]
	out := dst[at:]
	q, r := n/4, n%4
	g0 := src[0 : q+b2i(r > 0)]
	g1 := src[len(g0) : len(g0)+q+b2i(r > 1)]
	g2 := src[len(g0)+len(g1) : len(g0)+len(g1)+q+b2i(r > 2)]
	g3 := src[len(g0)+len(g1)+len(g2):]
	// 4 bytes of each group (16 output bytes) per step.
	i := 0
	for ; i+4 <= q; i += 4 {
		a0 := uint64(binary.LittleEndian.Uint32(g0[i:]))
		a1 := uint64(binary.LittleEndian.Uint32(g1[i:]))
		a2 := uint64(binary.LittleEndian.Uint32(g2[i:]))
		a3 := uint64(binary.LittleEndian.Uint32(g3[i:]))
		// spread places bytes 0 and 1 of x at byte positions 0 and 4 of a word.
		lo := spread(a0) | spread(a1)<<8 | spread(a2)<<16 | spread(a3)<<24
		hi := spread(a0>>16) | spread(a1>>16)<<8 | spread(a2>>16)<<16 | spread(a3>>16)<<24
		binary.LittleEndian.PutUint64(out[4*i:], lo)
		binary.LittleEndian.PutUint64(out[4*i+8:], hi)
	}
	for ; i < q; i++ {
		w := out[4*i : 4*i+4 : 4*i+4]
		w[0], w[1], w[2], w[3] = g0[i], g1[i], g2[i], g3[i]
	}
	tail := out[4*q:]
	if r > 0 {
		tail[0] = g0[q]
	}
	if r > 1 {
		tail[1] = g1[q]
	}
	if r > 2 {
		tail[2] = g2[q]
	}
	return dst
}

func spread(x uint64) uint64 { return x&0xFF | (x>>8&0xFF)<<32 }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// bg4Threshold is xet-core's KL-divergence threshold for recommending BG4.
const bg4Threshold = 0.02

// BG4Recommended is xet-core's BG4 predictor (bg4_prediction.rs): histograms of the popcount of
// each byte, one per position mod 4; BG4 is recommended when some group's distribution diverges
// from the pooled one (KL divergence > 0.02). Groups with an empty popcount bin get NaN in xet-core
// and are ignored there by f64::max; here they are skipped explicitly, so a group counts only when
// all 9 popcount values occur in it.
func BG4Recommended(chunk []byte) bool {
	return bg4MaxKL(chunk) > bg4Threshold
}

// bg4MaxKL returns the largest per-group KL divergence that is not NaN (0 when none is).
func bg4MaxKL(chunk []byte) float64 {
	hist := bg4Hist(chunk)
	var base [9]uint32
	var totals [4]uint32
	for j := range base {
		base[j] = 1
	}
	var baseTotal uint32
	for i := range hist {
		for j, c := range hist[i] {
			base[j] += c
			totals[i] += c
		}
		baseTotal += totals[i]
	}
	maxKL := 0.0
	for i := range hist {
		kl := 0.0
		for j, c := range hist[i] {
			p := float64(c) / float64(totals[i])
			q := float64(base[j]) / float64(baseTotal)
			kl += p * math.Log(p/q)
		}
		if !math.IsNaN(kl) && kl > maxKL {
			maxKL = kl
		}
	}
	return maxKL
}

// popBin maps a byte to its popcount bin in a packed counter: 1 << (7 × popcount), nine 7-bit
// fields in a uint64.
var popBin = func() (t [256]uint64) {
	for b := range t {
		t[b] = 1 << (7 * bits.OnesCount8(uint8(b)))
	}
	return t
}()

// packRun is how many bytes of a group a packed counter takes before a field could overflow.
const packRun = 127

// bg4Hist returns the histograms of the popcount of each byte, one per position mod 4. It is the
// predictor's hot loop (a compression attempt per chunk stored): each group's counts are kept in
// a register as nine 7-bit fields and added to the histogram every packRun bytes, instead of one
// increment in memory per byte.
func bg4Hist(chunk []byte) (hist [4][9]uint32) {
	q := len(chunk) &^ 3
	for start := 0; start < q; start += 4 * packRun {
		end := min(q, start+4*packRun)
		var a0, a1, a2, a3 uint64
		for i := start; i < end; i += 4 {
			w := chunk[i : i+4 : i+4]
			a0 += popBin[w[0]]
			a1 += popBin[w[1]]
			a2 += popBin[w[2]]
			a3 += popBin[w[3]]
		}
		for j := range 9 {
			sh := 7 * j
			hist[0][j] += uint32(a0 >> sh & 0x7f)
			hist[1][j] += uint32(a1 >> sh & 0x7f)
			hist[2][j] += uint32(a2 >> sh & 0x7f)
			hist[3][j] += uint32(a3 >> sh & 0x7f)
		}
	}
	for i, c := range chunk[q:] {
		hist[i][bits.OnesCount8(c)]++
	}
	return hist
}
