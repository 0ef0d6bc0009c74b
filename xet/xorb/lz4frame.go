package xorb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// LZ4 frame format (lz4_Frame_format.md). xet-core writes frames with lz4_flex's FrameEncoder
// defaults: FLG 0x60 (version 1, independent blocks, no checksums, no content size, no dict ID), BD
// from the first write (0x40 for at most 64 KiB, 0x50 above), one block per chunk, the end mark,
// nothing else. The encoder here writes exactly that frame around pierrec's block compressor; the
// decoder accepts any valid frame.
const (
	lz4Magic          = 0x184D2204
	lz4LegacyMagic    = 0x184C2102
	lz4SkippableMask  = 0xFFFFFFF0
	lz4SkippableMagic = 0x184D2A50

	flgVersionMask = 0xC0
	flgVersion1    = 0x40
	flgIndependent = 0x20
	flgBlockSum    = 0x10
	flgContentSize = 0x08
	flgContentSum  = 0x04
	flgReserved    = 0x02
	flgDictID      = 0x01

	lz4UncompressedBit = 0x80000000
	lz4Window          = 64 << 10
)

// ErrLZ4 is wrapped by every error about a malformed or over-limit LZ4 frame.
var ErrLZ4 = errors.New("lz4 frame")

// frameHeaders holds the 7-byte header xet-core would write for each BD block-size id (4..7).
var frameHeaders [8][7]byte

func init() {
	for id := 4; id <= 7; id++ {
		fd := [2]byte{0x60, byte(id << 4)}
		hc := byte(xxh32Sum(fd[:]) >> 8)
		frameHeaders[id] = [7]byte{0x04, 0x22, 0x4D, 0x18, fd[0], fd[1], hc}
	}
}

func blockMaxSize(id int) int { return 1 << (8 + 2*id) } // 4: 64 KiB, 5: 256 KiB, 6: 1 MiB, 7: 4 MiB

// encoder is per-goroutine scratch: pierrec's block compressor (its hash table) and a BG4 buffer.
type encoder struct {
	c     lz4.Compressor
	split []byte
}

var encoders = sync.Pool{New: func() any { return new(encoder) }}

func getEncoder() *encoder  { return encoders.Get().(*encoder) }
func putEncoder(e *encoder) { encoders.Put(e) }

// decoder is per-goroutine scratch for BG4 payloads.
type decoder struct{ grouped []byte }

var decoders = sync.Pool{New: func() any { return new(decoder) }}

func getDecoder() *decoder  { return decoders.Get().(*decoder) }
func putDecoder(d *decoder) { decoders.Put(d) }

// AppendLZ4Frame appends src as an LZ4 frame exactly as xet-core frames a chunk: the header for
// FLG 0x60 and the BD resolved from len(src), one block (stored raw, with the size word's high bit,
// when compression does not make it smaller), the end mark. Inputs over 256 KiB, which xet-core
// never frames, get the 1 MiB or 4 MiB block size and as many blocks as needed. Safe for concurrent
// use.
func AppendLZ4Frame(dst, src []byte) []byte {
	e := getEncoder()
	dst = e.appendFrame(dst, src)
	putEncoder(e)
	return dst
}

func (e *encoder) appendFrame(dst, src []byte) []byte {
	id := 4
	for id < 7 && len(src) > blockMaxSize(id) {
		id++
	}
	dst = append(dst, frameHeaders[id][:]...)
	bmax := blockMaxSize(id)
	for len(src) > 0 {
		blk := src[:min(len(src), bmax)]
		src = src[len(blk):]
		at := len(dst)
		dst = slices.Grow(dst, 4+lz4.CompressBlockBound(len(blk)))
		out := dst[at+4 : at+4+lz4.CompressBlockBound(len(blk))]
		n, err := e.c.CompressBlock(blk, out)
		if err != nil || n <= 0 || n >= len(blk) {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(blk))|lz4UncompressedBit)
			dst = append(dst, blk...)
			continue
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
		dst = dst[:at+4+n]
	}
	return append(dst, 0, 0, 0, 0)
}

// appendSmallerFrame appends src framed as appendFrame does and returns ok, or returns dst
// unchanged (its length) and false when that frame would not be smaller than src: then the record
// stores src uncompressed, and the incompressible block is never copied into a frame first.
func (e *encoder) appendSmallerFrame(dst, src []byte) ([]byte, bool) {
	if len(src) == 0 || len(src) > blockMaxSize(5) {
		f := e.appendFrame(dst, src)
		if len(f)-len(dst) >= len(src) {
			return dst, false
		}
		return f, true
	}
	id := 4
	if len(src) > blockMaxSize(4) {
		id = 5
	}
	// header (7) + size word (4) + block + end mark (4) must stay below len(src).
	limit := len(src) - 15
	if limit <= 0 {
		return dst, false
	}
	at := len(dst)
	bound := lz4.CompressBlockBound(len(src))
	dst = slices.Grow(dst, 11+bound+4)
	out := dst[at+11 : at+11+bound]
	n, err := e.c.CompressBlock(src, out)
	if err != nil || n <= 0 || n >= limit {
		return dst[:at], false
	}
	dst = dst[:at+11+n]
	copy(dst[at:], frameHeaders[id][:])
	binary.LittleEndian.PutUint32(dst[at+7:], uint32(n))
	return append(dst, 0, 0, 0, 0), true
}

// DecodeLZ4Frame decodes src, one or more concatenated LZ4 frames (skippable frames are skipped),
// and appends the content to dst. It accepts every option of the frame format except a dictionary
// ID: linked or independent blocks, block and content checksums (verified), content size (checked),
// uncompressed blocks, all block sizes. It fails, before allocating beyond it, when the content
// would exceed maxSize bytes, and on any malformed, truncated or trailing input. Safe for concurrent
// use.
func DecodeLZ4Frame(dst, src []byte, maxSize int) ([]byte, error) {
	out, err := decodeFrames(dst, src, maxSize)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func decodeFrames(dst, src []byte, maxSize int) ([]byte, error) {
	if maxSize < 0 {
		maxSize = 0
	}
	if len(src) == 0 {
		return dst, fmt.Errorf("%w: empty input", ErrLZ4)
	}
	limit := len(dst) + maxSize // absolute length dst may reach
	total := len(src)
	for len(src) > 0 {
		off := total - len(src)
		if len(src) < 4 {
			return dst, fmt.Errorf("%w: %d trailing bytes at offset %d, not a frame", ErrLZ4, len(src), off)
		}
		magic := binary.LittleEndian.Uint32(src)
		switch {
		case magic == lz4Magic:
			var err error
			var used int
			dst, used, err = decodeFrame(dst, src[4:], limit)
			if err != nil {
				return dst, fmt.Errorf("frame at offset %d: %w", off, err)
			}
			src = src[4+used:]
		case magic&lz4SkippableMask == lz4SkippableMagic:
			if len(src) < 8 {
				return dst, fmt.Errorf("%w: skippable frame at offset %d: truncated size", ErrLZ4, off)
			}
			n := uint64(binary.LittleEndian.Uint32(src[4:]))
			if n > uint64(len(src)-8) {
				return dst, fmt.Errorf("%w: skippable frame at offset %d: size %d beyond the input", ErrLZ4, off, n)
			}
			src = src[8+n:]
		case magic == lz4LegacyMagic:
			return dst, fmt.Errorf("%w: legacy LZ4 format (magic %08x) at offset %d is not supported", ErrLZ4, magic, off)
		default:
			return dst, fmt.Errorf("%w: bad magic %08x at offset %d", ErrLZ4, magic, off)
		}
	}
	return dst, nil
}

// decodeFrame decodes the frame whose descriptor starts src (after the magic), appending its content
// to dst, never past length limit. used = bytes of src consumed.
func decodeFrame(dst, src []byte, limit int) (out []byte, used int, err error) {
	if len(src) < 3 {
		return dst, 0, fmt.Errorf("%w: truncated frame descriptor", ErrLZ4)
	}
	flg, bd := src[0], src[1]
	if flg&flgVersionMask != flgVersion1 {
		return dst, 0, fmt.Errorf("%w: unsupported frame version %d (FLG %02x)", ErrLZ4, flg>>6, flg)
	}
	if flg&flgReserved != 0 || bd&0x8F != 0 {
		return dst, 0, fmt.Errorf("%w: reserved bits set (FLG %02x BD %02x)", ErrLZ4, flg, bd)
	}
	if flg&flgDictID != 0 {
		return dst, 0, fmt.Errorf("%w: frames needing a dictionary (dict ID flag) are not supported", ErrLZ4)
	}
	id := int(bd >> 4)
	if id < 4 {
		return dst, 0, fmt.Errorf("%w: invalid block size id %d (BD %02x)", ErrLZ4, id, bd)
	}
	dlen := 2
	var contentSize uint64
	hasSize := flg&flgContentSize != 0
	if hasSize {
		dlen += 8
	}
	if len(src) < dlen+1 {
		return dst, 0, fmt.Errorf("%w: truncated frame descriptor", ErrLZ4)
	}
	if hasSize {
		contentSize = binary.LittleEndian.Uint64(src[2:])
	}
	if hc := byte(xxh32Sum(src[:dlen]) >> 8); hc != src[dlen] {
		return dst, 0, fmt.Errorf("%w: header checksum %02x, want %02x", ErrLZ4, src[dlen], hc)
	}
	p := dlen + 1
	start := len(dst)
	if hasSize {
		if contentSize > uint64(limit-start) {
			return dst, 0, fmt.Errorf("%w: content size %d exceeds the limit of %d bytes", ErrLZ4, contentSize, limit-start)
		}
		limit = start + int(contentSize) // the content must be exactly this long
		dst = growBounded(dst, int(contentSize), limit)
	}
	bmax := blockMaxSize(id)
	linked := flg&flgIndependent == 0
	blockSum := flg&flgBlockSum != 0
	for {
		if len(src)-p < 4 {
			return dst, 0, fmt.Errorf("%w: truncated before a block size word (no end mark)", ErrLZ4)
		}
		word := binary.LittleEndian.Uint32(src[p:])
		p += 4
		if word == 0 {
			break
		}
		size := int(word &^ lz4UncompressedBit)
		if size > bmax {
			return dst, 0, fmt.Errorf("%w: block of %d bytes exceeds the frame's block size %d", ErrLZ4, size, bmax)
		}
		need := size
		if blockSum {
			need += 4
		}
		if len(src)-p < need {
			return dst, 0, fmt.Errorf("%w: block of %d bytes, only %d present", ErrLZ4, size, len(src)-p)
		}
		data := src[p : p+size]
		p += size
		if blockSum {
			if got, want := xxh32Sum(data), binary.LittleEndian.Uint32(src[p:]); got != want {
				return dst, 0, fmt.Errorf("%w: block checksum %08x, want %08x", ErrLZ4, got, want)
			}
			p += 4
		}
		room := limit - len(dst)
		if word&lz4UncompressedBit != 0 {
			if size > room {
				return dst, 0, fmt.Errorf("%w: content exceeds the limit of %d bytes", ErrLZ4, limit-start)
			}
			dst = append(dst, data...)
			continue
		}
		// A block decodes to at most bmax bytes, and LZ4 expands at most 255-fold (each extra
		// length byte adds 255), so never reserve more than the block can justify.
		room = min(room, bmax, 255*len(data)+64)
		dst = growBounded(dst, room, limit)
		at := len(dst)
		var dict []byte
		if linked {
			dict = dst[max(start, at-lz4Window):at]
		}
		n, err := lz4.UncompressBlockWithDict(data, dst[at:at+room], dict)
		if err != nil {
			if room < min(bmax, 255*len(data)+64) {
				return dst[:at], 0, fmt.Errorf("%w: corrupt block, or content exceeds the limit of %d bytes", ErrLZ4, limit-start)
			}
			return dst[:at], 0, fmt.Errorf("%w: corrupt block", ErrLZ4)
		}
		dst = dst[:at+n]
	}
	if flg&flgContentSum != 0 {
		if len(src)-p < 4 {
			return dst, 0, fmt.Errorf("%w: truncated content checksum", ErrLZ4)
		}
		if got, want := xxh32Sum(dst[start:]), binary.LittleEndian.Uint32(src[p:]); got != want {
			return dst, 0, fmt.Errorf("%w: content checksum %08x, want %08x", ErrLZ4, got, want)
		}
		p += 4
	}
	if hasSize && uint64(len(dst)-start) != contentSize {
		return dst, 0, fmt.Errorf("%w: content is %d bytes, header says %d", ErrLZ4, len(dst)-start, contentSize)
	}
	return dst, p, nil
}

// growBounded makes room for n more bytes in b (len unchanged), growing geometrically but never
// beyond a capacity of limit.
func growBounded(b []byte, n, limit int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	c := max(len(b)+n, min(2*cap(b), limit))
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}
