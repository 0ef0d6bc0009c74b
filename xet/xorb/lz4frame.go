package xorb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// LZ4 frame format (lz4_Frame_format.md). xet-core writes frames with lz4_flex's FrameEncoder
// defaults: FLG 0x60 (version 1, independent blocks, no checksums, no content size, no dict ID), BD
// from the first write (0x40 for at most 64 KiB, 0x50 above), one block per chunk, the end mark,
// nothing else. The encoder here writes exactly that frame around pierrec's block compressor. The
// decoder reads that shape itself (the hot path: one block per chunk, decoded straight into the
// caller's buffer) and hands every other frame (checksums, linked blocks, content size, several or
// skippable frames) to pierrec's frame reader.
const (
	lz4UncompressedBit = 0x80000000
	lz4EndMark         = 0
	// lz4MaxExpansion: LZ4 decodes at most about 255 bytes per input byte (each extra length byte
	// adds 255); never reserve more than a block can justify.
	lz4MaxExpansion = 255
)

// ErrLZ4 is wrapped by every error about a malformed or over-limit LZ4 frame.
var ErrLZ4 = errors.New("lz4 frame")

// frameHeaders holds the 7-byte header (magic, FLG 0x60, BD, header checksum) xet-core writes for
// each BD block-size id (4..7). The checksum bytes are xxh32 of FLG and BD, shifted by 8, as the
// frame format defines them; TestFrameHeadersAreValid checks them against pierrec's frame reader.
var frameHeaders = [8][7]byte{
	4: {0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82},
	5: {0x04, 0x22, 0x4D, 0x18, 0x60, 0x50, 0xFB},
	6: {0x04, 0x22, 0x4D, 0x18, 0x60, 0x60, 0x51},
	7: {0x04, 0x22, 0x4D, 0x18, 0x60, 0x70, 0x73},
}

func blockMaxSize(id int) int { return 1 << (8 + 2*id) } // 4: 64 KiB, 5: 256 KiB, 6: 1 MiB, 7: 4 MiB

// encoder is per-goroutine scratch: pierrec's block compressor (its hash table) and a BG4 buffer.
type encoder struct {
	c     lz4.Compressor
	split []byte
}

// decoder is per-goroutine scratch for BG4 payloads.
type decoder struct{ grouped []byte }

var decoders = sync.Pool{New: func() any { return new(decoder) }}

func getDecoder() *decoder  { return decoders.Get().(*decoder) }
func putDecoder(d *decoder) { decoders.Put(d) }

// appendFrame appends src as an LZ4 frame exactly as xet-core frames a chunk: the header for FLG
// 0x60 and the BD resolved from len(src), one block (stored raw, with the size word's high bit, when
// compression does not make it smaller), the end mark. Inputs over 256 KiB, which xet-core never
// frames, get the 1 MiB or 4 MiB block size and as many blocks as needed.
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

// decodeFrames decodes src, one or more LZ4 frames, and appends their content to dst. It fails,
// before allocating beyond it, when the content would exceed maxSize bytes, and on any malformed,
// truncated or trailing input. Frames in xet-core's shape are decoded here; any other goes to
// pierrec's frame reader (decodeFramesGeneral).
func decodeFrames(dst, src []byte, maxSize int) ([]byte, error) {
	maxSize = max(maxSize, 0)
	if out, ok, err := decodeXetFrame(dst, src, maxSize); ok {
		return out, err
	}
	return decodeFramesGeneral(dst, src, maxSize)
}

// decodeXetFrame decodes src when it is one frame in xet-core's shape: one of frameHeaders,
// independent blocks without checksums, the end mark, nothing after it. ok is false (and nothing
// was appended) when src has another shape.
func decodeXetFrame(dst, src []byte, maxSize int) (out []byte, ok bool, err error) {
	if len(src) < 7+4 {
		return dst, false, nil
	}
	id := int(src[5] >> 4)
	if id < 4 || id > 7 || [7]byte(src[:7]) != frameHeaders[id] {
		return dst, false, nil
	}
	start, limit := len(dst), len(dst)+maxSize
	bmax := blockMaxSize(id)
	p := 7
	for {
		if len(src)-p < 4 {
			return dst[:start], true, fmt.Errorf("%w: truncated before a block size word (no end mark)", ErrLZ4)
		}
		word := binary.LittleEndian.Uint32(src[p:])
		p += 4
		if word == lz4EndMark {
			break
		}
		size := int(word &^ lz4UncompressedBit)
		if size > bmax || len(src)-p < size {
			return dst[:start], true, fmt.Errorf("%w: block of %d bytes, %d present, frame block size %d", ErrLZ4, size, len(src)-p, bmax)
		}
		data := src[p : p+size]
		p += size
		room := limit - len(dst)
		if word&lz4UncompressedBit != 0 {
			if size > room {
				return dst[:start], true, fmt.Errorf("%w: content exceeds the limit of %d bytes", ErrLZ4, maxSize)
			}
			dst = append(dst, data...)
			continue
		}
		room = min(room, bmax, lz4MaxExpansion*len(data)+64)
		if room <= 0 {
			return dst[:start], true, fmt.Errorf("%w: content exceeds the limit of %d bytes", ErrLZ4, maxSize)
		}
		dst = growBounded(dst, room, limit)
		at := len(dst)
		n, err := lz4.UncompressBlock(data, dst[at:at+room])
		if err != nil {
			return dst[:start], true, fmt.Errorf("%w: corrupt block, or content over the limit of %d bytes", ErrLZ4, maxSize)
		}
		dst = dst[:at+n]
	}
	if p != len(src) {
		// More frames, or trailing bytes: the general reader decides.
		return dst[:start], false, nil
	}
	return dst, true, nil
}

// decodeFramesGeneral decodes any sequence of LZ4 frames with pierrec's frame reader, which checks
// header, block and content checksums and the content size, reads linked blocks and skips
// skippable frames. The content is read at most maxSize+1 bytes far, so an over-limit frame fails
// without being decoded whole.
func decodeFramesGeneral(dst, src []byte, maxSize int) ([]byte, error) {
	start := len(dst)
	if len(src) == 0 {
		return dst, fmt.Errorf("%w: empty input", ErrLZ4)
	}
	zr := lz4.NewReader(bytes.NewReader(src))
	for {
		if len(dst)-start == maxSize {
			// Full: one more byte means the content is over the limit.
			var probe [1]byte
			n, err := io.ReadFull(zr, probe[:])
			if n > 0 {
				return dst[:start], fmt.Errorf("%w: content exceeds the limit of %d bytes", ErrLZ4, maxSize)
			}
			if err != io.EOF {
				return dst[:start], fmt.Errorf("%w: %w", ErrLZ4, err)
			}
			return dst, nil
		}
		dst = growBounded(dst, min(64<<10, maxSize-(len(dst)-start)), start+maxSize)
		n, err := zr.Read(dst[len(dst):min(cap(dst), start+maxSize)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst[:start], fmt.Errorf("%w: %w", ErrLZ4, err)
		}
	}
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
