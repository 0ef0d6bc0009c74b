package xorb

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrFooter is returned by ParseRecordHeader (and the record walkers, wrapped) when the bytes start
// with "XETBLOB": the records have ended and the footer begins.
var ErrFooter = errors.New("xorb: footer (XETBLOB) where a chunk record was expected")

// ErrTruncated is wrapped by errors about records or footers cut short.
var ErrTruncated = errors.New("xorb: truncated")

var footerMagic = []byte("XETBLOB")

// RecordHeader is the 8-byte header of a chunk record: version (0), u24 LE payload length, scheme,
// u24 LE raw length.
type RecordHeader struct {
	Version       uint8
	CompressedLen uint32
	Scheme        Scheme
	RawLen        uint32
}

// ParseRecordHeader parses and validates the record header at the start of b: version 0, a known
// scheme, raw length <= MaxChunkRaw, payload length <= MaxChunkCompressed, and for SchemeNone equal
// lengths. It returns ErrFooter when b starts with "XETBLOB".
func ParseRecordHeader(b []byte) (RecordHeader, error) {
	if len(b) >= len(footerMagic) && bytes.Equal(b[:len(footerMagic)], footerMagic) {
		return RecordHeader{}, ErrFooter
	}
	if len(b) < RecordHeaderSize {
		return RecordHeader{}, fmt.Errorf("%w: record header needs %d bytes, have %d", ErrTruncated, RecordHeaderSize, len(b))
	}
	h := RecordHeader{
		Version:       b[0],
		CompressedLen: uint32(b[1]) | uint32(b[2])<<8 | uint32(b[3])<<16,
		Scheme:        Scheme(b[4]),
		RawLen:        uint32(b[5]) | uint32(b[6])<<8 | uint32(b[7])<<16,
	}
	if h.Version != 0 {
		return h, fmt.Errorf("xorb: unsupported chunk record version %d", h.Version)
	}
	if !h.Scheme.Valid() {
		return h, fmt.Errorf("xorb: unknown compression scheme %d", uint8(h.Scheme))
	}
	if h.RawLen > MaxChunkRaw {
		return h, fmt.Errorf("xorb: chunk raw length %d exceeds %d", h.RawLen, MaxChunkRaw)
	}
	if h.CompressedLen > MaxChunkCompressed {
		return h, fmt.Errorf("xorb: chunk payload length %d exceeds %d", h.CompressedLen, MaxChunkCompressed)
	}
	if h.Scheme == SchemeNone && h.CompressedLen != h.RawLen {
		return h, fmt.Errorf("xorb: uncompressed chunk with payload length %d != raw length %d", h.CompressedLen, h.RawLen)
	}
	return h, nil
}

// appendHeader appends the header fields (no validation).
func appendHeader(dst []byte, compLen int, s Scheme, rawLen int) []byte {
	return append(dst, 0, byte(compLen), byte(compLen>>8), byte(compLen>>16), byte(s),
		byte(rawLen), byte(rawLen>>8), byte(rawLen>>16))
}

func putHeader(b []byte, compLen int, s Scheme, rawLen int) {
	_ = b[7]
	b[0] = 0
	b[1], b[2], b[3] = byte(compLen), byte(compLen>>8), byte(compLen>>16)
	b[4] = byte(s)
	b[5], b[6], b[7] = byte(rawLen), byte(rawLen>>8), byte(rawLen>>16)
}

// appendRecord compresses raw with scheme and appends the record (header and payload) to dst, with
// e's scratch space. When the compressed form is not smaller than raw, it stores raw with
// SchemeNone, as xet-core does. The payload is compressed straight into dst; a chunk that does not
// get smaller is copied in once, uncompressed, or with lend not at all: then only its header is
// appended and lent is true (the caller records where the payload comes from). raw must be at most
// MaxChunkRaw bytes (larger input panics: it is a caller bug, not bad input).
func (e *encoder) appendRecord(dst, raw []byte, scheme Scheme, lend bool) ([]byte, bool) {
	if len(raw) > MaxChunkRaw {
		panic(fmt.Sprintf("xorb: appendRecord of %d bytes (max %d)", len(raw), MaxChunkRaw))
	}
	start := len(dst)
	dst = appendHeader(dst, 0, 0, 0)
	payload := len(dst)
	ok := false
	switch scheme {
	case SchemeLZ4:
		dst, ok = e.appendSmallerFrame(dst, raw)
	case SchemeBG4LZ4:
		e.split = BG4Split(e.split[:0], raw)
		dst, ok = e.appendSmallerFrame(dst, e.split)
	case SchemeNone:
	default:
		panic(fmt.Sprintf("xorb: appendRecord with invalid scheme %d", uint8(scheme)))
	}
	if !ok && lend { // stored uncompressed, its payload lent: the header only
		dst = dst[:payload]
		putHeader(dst[start:], len(raw), SchemeNone, len(raw))
		return dst, true
	}
	if !ok {
		dst = append(dst[:payload], raw...)
		scheme = SchemeNone
	}
	putHeader(dst[start:], len(dst)-payload, scheme, len(raw))
	return dst, false
}

// DecodeRecord decodes the record at the start of b and appends its raw bytes to dst. n is the
// number of bytes the record takes in b. The payload must decode to exactly the declared raw length.
func DecodeRecord(dst, b []byte) (out []byte, h RecordHeader, n int, err error) {
	d := getDecoder()
	out, h, n, err = d.decodeRecord(dst, b)
	putDecoder(d)
	return out, h, n, err
}

// RecordRaw returns the raw bytes of the record at the start of b: an uncompressed payload where it
// lies in b (no copy), any other decoded into scratch. The result aliases b or scratch; pass the
// returned scratch to the next call. n is the number of bytes the record takes in b.
func RecordRaw(scratch, b []byte) (raw, scratchOut []byte, h RecordHeader, n int, err error) {
	d := getDecoder()
	defer putDecoder(d)
	return d.recordRaw(scratch, b)
}

// decodeRecord is DecodeRecord with d's scratch space.
func (d *decoder) decodeRecord(dst, b []byte) ([]byte, RecordHeader, int, error) {
	h, err := ParseRecordHeader(b)
	if err != nil {
		return dst, h, 0, err
	}
	n := RecordHeaderSize + int(h.CompressedLen)
	if len(b) < n {
		return dst, h, 0, fmt.Errorf("%w: record payload of %d bytes, only %d present", ErrTruncated, h.CompressedLen, len(b)-RecordHeaderSize)
	}
	out, err := d.decodePayload(dst, b[RecordHeaderSize:n], h)
	if err != nil {
		return dst, h, 0, err
	}
	return out, h, n, nil
}

// recordRaw is RecordRaw with d's scratch space.
func (d *decoder) recordRaw(scratch, b []byte) (raw, scratchOut []byte, h RecordHeader, n int, err error) {
	h, err = ParseRecordHeader(b)
	if err == nil && h.Scheme == SchemeNone {
		n = RecordHeaderSize + int(h.CompressedLen)
		if len(b) < n {
			return nil, scratch, h, 0, fmt.Errorf("%w: record payload of %d bytes, only %d present", ErrTruncated, h.CompressedLen, len(b)-RecordHeaderSize)
		}
		return b[RecordHeaderSize:n], scratch, h, n, nil
	}
	raw, h, n, err = d.decodeRecord(scratch[:0], b)
	if err != nil {
		return nil, scratch, h, 0, err
	}
	return raw, raw, h, n, nil
}

// decodePayload appends the raw bytes of a validated header's payload to dst.
func (d *decoder) decodePayload(dst, payload []byte, h RecordHeader) ([]byte, error) {
	raw := int(h.RawLen)
	base := len(dst)
	switch h.Scheme {
	case SchemeNone:
		return append(dst, payload...), nil
	case SchemeLZ4:
		out, err := decodeFrames(dst, payload, raw)
		if err != nil {
			return dst, fmt.Errorf("xorb: lz4 chunk: %w", err)
		}
		if len(out)-base != raw {
			return dst, fmt.Errorf("xorb: lz4 chunk decoded to %d bytes, header says %d", len(out)-base, raw)
		}
		return out, nil
	case SchemeBG4LZ4:
		var err error
		d.grouped, err = decodeFrames(d.grouped[:0], payload, raw)
		if err != nil {
			return dst, fmt.Errorf("xorb: bg4-lz4 chunk: %w", err)
		}
		if len(d.grouped) != raw {
			return dst, fmt.Errorf("xorb: bg4-lz4 chunk decoded to %d bytes, header says %d", len(d.grouped), raw)
		}
		return BG4Regroup(dst, d.grouped), nil
	}
	return dst, fmt.Errorf("xorb: unknown compression scheme %d", uint8(h.Scheme))
}
