package xorb

import (
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// StreamIndex is Index for a xorb object read from a stream of known length, record by record,
// without holding the object: each record is decoded, hashed and checked as it passes, and handed
// to the caller whole. Memory is the caller's buffer, one decoded chunk and the chunk list.
// Not safe for concurrent use.
type StreamIndex struct {
	sc      *RecordScanner
	o       IndexOptions
	d       *decoder
	hasher  *hash.ChunkHasher
	scratch []byte
	info    Info
	err     error // sticky: the first error, or io.EOF once the object is checked
}

// NewStreamIndex indexes the n bytes r yields, reading through buf, which must hold the largest
// record (RecordHeaderSize + MaxChunkCompressed bytes). o.AllowTrailing is not supported (a stream
// is never a cut-off object). Close returns its decoder.
func NewStreamIndex(r io.Reader, n int64, buf []byte, o IndexOptions) *StreamIndex {
	return &StreamIndex{sc: NewRecordScanner(r, buf, n), o: o, d: getDecoder(), hasher: hash.NewChunkHasher()}
}

// Next returns the next chunk record, header and payload (valid until the next call), once its chunk
// has been decoded, hashed and found within the limits. After the last record it reads what follows
// (nothing, a footer, which must agree with the records, or fewer than 7 bytes of a cut-off
// "XETBLOB") and returns io.EOF; Info then describes the object. Other errors are Index's, except
// that a stream ending before its length gives one wrapping ErrStreamShort. Errors are sticky.
func (x *StreamIndex) Next() ([]byte, error) {
	if x.err != nil {
		return nil, x.err
	}
	rec, _, err := x.sc.Next()
	if err == io.EOF {
		err = x.finish()
	} else if err == nil {
		err = x.add(rec)
	}
	if err != nil {
		x.err = err
		return nil, err
	}
	return rec, nil
}

// add decodes, hashes and appends the chunk of one record.
func (x *StreamIndex) add(rec []byte) error {
	raw, scratch, h, n, err := x.d.recordRaw(x.scratch, rec)
	x.scratch = scratch
	if err != nil {
		return chunkError(len(x.info.Chunks), x.info.RecordsLen, err)
	}
	return x.info.add(x.hasher, raw, h, n, x.o.OnRaw)
}

// finish checks the bytes after the records and completes the info.
func (x *StreamIndex) finish() error {
	rest, err := x.sc.rest(MaxFooterSize)
	if err != nil {
		return err
	}
	if err := x.info.end(rest); err != nil {
		return err
	}
	return io.EOF
}

// Info returns what the object held, once Next has returned io.EOF (nil before).
func (x *StreamIndex) Info() *Info {
	if x.err != io.EOF {
		return nil
	}
	return &x.info
}

// Close releases the decoder; the StreamIndex is not used afterwards.
func (x *StreamIndex) Close() {
	if x.d != nil {
		putDecoder(x.d)
		x.d = nil
	}
	if x.err == nil {
		x.err = errClosed
	}
}
