package xorb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrStreamShort is wrapped by the error of a RecordScanner whose stream ended before the length
// it was promised: the bytes were cut short on the way (worth fetching again), not malformed.
var ErrStreamShort = errors.New("xorb: record stream ended early")

// RecordScanner reads the chunk records of a stream of known length (a fetched range of a xorb)
// through a caller's buffer, handing out each whole record, header and payload, as a slice of that
// buffer: no copy beyond the read itself. The buffer must hold the largest record
// (RecordHeaderSize + MaxChunkCompressed bytes); a record handed out is valid until the next call.
// It stops at the end of the stream or at a footer. Not safe for concurrent use.
type RecordScanner struct {
	r      io.Reader
	buf    []byte
	lo, hi int   // unconsumed bytes buf[lo:hi]
	left   int64 // bytes of the stream not yet read
	done   bool
}

// NewRecordScanner returns a scanner of the n bytes r yields, reading through buf.
func NewRecordScanner(r io.Reader, buf []byte, n int64) *RecordScanner {
	return &RecordScanner{r: r, buf: buf, left: n}
}

// Next returns the next record and its header, or io.EOF at the end of the stream, at a footer, or
// at a cut-off footer (fewer than RecordHeaderSize bytes that begin "XETBLOB"). A partial record is
// an error wrapping io.ErrUnexpectedEOF; a stream ending before its length, one wrapping
// ErrStreamShort too.
func (s *RecordScanner) Next() ([]byte, RecordHeader, error) {
	var h RecordHeader
	if s.done {
		return nil, h, io.EOF
	}
	if err := s.fill(RecordHeaderSize); err != nil {
		return nil, h, err
	}
	avail := s.buf[s.lo:s.hi]
	if len(avail) == 0 {
		s.done = true
		return nil, h, io.EOF
	}
	if len(avail) < RecordHeaderSize {
		if bytes.HasPrefix(footerMagic, avail) {
			s.done = true
			return nil, h, io.EOF
		}
		return nil, h, fmt.Errorf("record header cut off after %d bytes: %w", len(avail), io.ErrUnexpectedEOF)
	}
	h, err := ParseRecordHeader(avail)
	if errors.Is(err, ErrFooter) {
		s.done = true
		return nil, h, io.EOF
	}
	if err != nil {
		return nil, h, err
	}
	n := RecordHeaderSize + int(h.CompressedLen)
	if n > len(s.buf) {
		return nil, h, fmt.Errorf("record of %d bytes does not fit the %d-byte buffer", n, len(s.buf))
	}
	if err := s.fill(n); err != nil {
		return nil, h, err
	}
	if s.hi-s.lo < n {
		return nil, h, fmt.Errorf("record payload of %d bytes cut off after %d: %w", h.CompressedLen, s.hi-s.lo-RecordHeaderSize, io.ErrUnexpectedEOF)
	}
	rec := s.buf[s.lo : s.lo+n]
	s.lo += n
	return rec, h, nil
}

// rest returns the bytes of the stream after the last record Next handed out (the footer, once
// Next has returned io.EOF), reading what is left; more than limit bytes is an error.
func (s *RecordScanner) rest(limit int) ([]byte, error) {
	have := s.hi - s.lo
	if int64(have)+s.left > int64(limit) {
		return nil, fmt.Errorf("xorb: %d bytes after the records, more than a footer's %d", int64(have)+s.left, limit)
	}
	out := make([]byte, have+int(s.left))
	copy(out, s.buf[s.lo:s.hi])
	k, err := io.ReadFull(s.r, out[have:])
	s.lo, s.hi = 0, 0
	s.left -= int64(k)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("%w, %d bytes short: %w", ErrStreamShort, s.left, io.ErrUnexpectedEOF)
	}
	return out, err
}

// fill makes buf[lo:hi] hold at least n bytes, or all that is left of the stream.
func (s *RecordScanner) fill(n int) error {
	if s.hi-s.lo >= n || s.left == 0 {
		return nil
	}
	if len(s.buf)-s.lo < n {
		s.hi = copy(s.buf, s.buf[s.lo:s.hi])
		s.lo = 0
	}
	want := min(int64(len(s.buf)-s.hi), s.left)
	need := min(int64(n-(s.hi-s.lo)), want)
	k, err := io.ReadAtLeast(s.r, s.buf[s.hi:s.hi+int(want)], int(need))
	s.hi += k
	s.left -= int64(k)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w, %d bytes short: %w", ErrStreamShort, s.left, io.ErrUnexpectedEOF)
	}
	return err
}
