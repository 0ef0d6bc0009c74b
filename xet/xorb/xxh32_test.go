package xorb

// A test-only xxHash32, to build LZ4 frames by hand (checksummed descriptors and blocks) for the
// decoder tests. Production code uses pierrec/lz4 for everything xxHash32 is needed for.

import (
	"encoding/binary"
	"math/bits"
)

// xxHash32 (seed 0 unless given), used by LZ4 frames for the header checksum, block checksums and the
// content checksum.
const (
	xxPrime1 uint32 = 2654435761
	xxPrime2 uint32 = 2246822519
	xxPrime3 uint32 = 3266489917
	xxPrime4 uint32 = 668265263
	xxPrime5 uint32 = 374761393
)

func xxRound(acc, in uint32) uint32 {
	return bits.RotateLeft32(acc+in*xxPrime2, 13) * xxPrime1
}

// xxh32 is a streaming xxHash32 digest. The zero value is not ready: use reset.
type xxh32 struct {
	v     [4]uint32
	seed  uint32
	total uint64
	buf   [16]byte
	nbuf  int
}

func (x *xxh32) reset(seed uint32) {
	x.seed = seed
	x.v = [4]uint32{seed + xxPrime1 + xxPrime2, seed + xxPrime2, seed, seed - xxPrime1}
	x.total = 0
	x.nbuf = 0
}

func (x *xxh32) write(p []byte) {
	x.total += uint64(len(p))
	if x.nbuf > 0 {
		n := copy(x.buf[x.nbuf:], p)
		x.nbuf += n
		p = p[n:]
		if x.nbuf < 16 {
			return
		}
		x.stripes(x.buf[:])
		x.nbuf = 0
	}
	full := len(p) &^ 15
	if full > 0 {
		x.stripes(p[:full])
		p = p[full:]
	}
	x.nbuf = copy(x.buf[:], p)
}

func (x *xxh32) stripes(p []byte) {
	v0, v1, v2, v3 := x.v[0], x.v[1], x.v[2], x.v[3]
	for ; len(p) >= 16; p = p[16:] {
		v0 = xxRound(v0, binary.LittleEndian.Uint32(p[0:]))
		v1 = xxRound(v1, binary.LittleEndian.Uint32(p[4:]))
		v2 = xxRound(v2, binary.LittleEndian.Uint32(p[8:]))
		v3 = xxRound(v3, binary.LittleEndian.Uint32(p[12:]))
	}
	x.v = [4]uint32{v0, v1, v2, v3}
}

func (x *xxh32) sum() uint32 {
	var h uint32
	if x.total >= 16 {
		h = bits.RotateLeft32(x.v[0], 1) + bits.RotateLeft32(x.v[1], 7) +
			bits.RotateLeft32(x.v[2], 12) + bits.RotateLeft32(x.v[3], 18)
	} else {
		h = x.seed + xxPrime5
	}
	h += uint32(x.total)
	p := x.buf[:x.nbuf]
	for ; len(p) >= 4; p = p[4:] {
		h += binary.LittleEndian.Uint32(p) * xxPrime3
		h = bits.RotateLeft32(h, 17) * xxPrime4
	}
	for _, b := range p {
		h += uint32(b) * xxPrime5
		h = bits.RotateLeft32(h, 11) * xxPrime1
	}
	h ^= h >> 15
	h *= xxPrime2
	h ^= h >> 13
	h *= xxPrime3
	h ^= h >> 16
	return h
}

// xxh32Sum returns xxHash32 of p with seed 0.
func xxh32Sum(p []byte) uint32 {
	var x xxh32
	x.reset(0)
	x.write(p)
	return x.sum()
}
