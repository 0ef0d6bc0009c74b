package xorb

import (
	"errors"
	"fmt"
	"io"
)

// RecordReader reads chunk records from a stream. Memory use is bounded by the record limits
// (MaxChunkCompressed for the payload). Not safe for concurrent use.
type RecordReader struct {
	r       io.Reader
	hdr     [RecordHeaderSize]byte
	payload []byte
	d       decoder
	n       int // records read
	done    bool
}

// NewRecordReader returns a RecordReader over r.
func NewRecordReader(r io.Reader) *RecordReader { return &RecordReader{r: r} }

// Next reads the next record and appends its raw bytes to dst. It returns io.EOF at the end of the
// stream, at a footer ("XETBLOB"), or at a final fragment of fewer than 8 bytes that begins
// "XETBLOB" (a cut-off footer). Any other partial record is an error wrapping io.ErrUnexpectedEOF.
func (r *RecordReader) Next(dst []byte) (raw []byte, h RecordHeader, err error) {
	if r.done {
		return dst, h, io.EOF
	}
	n, err := io.ReadFull(r.r, r.hdr[:])
	if err == io.EOF {
		r.done = true
		return dst, h, io.EOF
	}
	if err == io.ErrUnexpectedEOF && isFooterPrefix(r.hdr[:n]) {
		r.done = true
		return dst, h, io.EOF
	}
	if err != nil {
		return dst, h, fmt.Errorf("xorb: reading chunk %d header: %w", r.n, err)
	}
	h, err = ParseRecordHeader(r.hdr[:])
	if errors.Is(err, ErrFooter) {
		r.done = true
		return dst, h, io.EOF
	}
	if err != nil {
		return dst, h, fmt.Errorf("xorb: chunk %d: %w", r.n, err)
	}
	if cap(r.payload) < int(h.CompressedLen) {
		r.payload = make([]byte, h.CompressedLen)
	}
	r.payload = r.payload[:h.CompressedLen]
	if _, err := io.ReadFull(r.r, r.payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return dst, h, fmt.Errorf("xorb: reading chunk %d payload of %d bytes: %w", r.n, h.CompressedLen, err)
	}
	out, err := r.d.decodePayload(dst, r.payload, h)
	if err != nil {
		return dst, h, fmt.Errorf("xorb: chunk %d: %w", r.n, err)
	}
	r.n++
	return out, h, nil
}
