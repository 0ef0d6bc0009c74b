package store

import (
	"context"
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// PutXorbBytes is PutXorb for a body already in memory: the same full validation (every chunk
// decoded and hashed, the xorb hash recomputed), without copying the body first.
func (s *Store) PutXorbBytes(ctx context.Context, h hash.Hash, body []byte) (bool, error) {
	if ok, err := s.be.Exists(ctx, xorbName(h)); err != nil || ok {
		return false, err
	}
	return s.validateAndStoreXorb(ctx, h, body)
}

// PutBuiltXorb stores a xorb that this process has just built with xorb.Builder, taking the chunk
// infos the builder computed instead of decoding and re-hashing every chunk.
//
// Trust boundary: this is the in-process path of the embedded store (xet/embedded), for xorbs whose
// chunk hashes were computed from the data by this process's chunker. It checks everything that is
// cheap to check: the limits, that the records tile x.Body exactly, that every record header agrees
// with its chunk info (scheme, raw length, payload length), and that x.Hash is the merkle hash of the
// chunk infos. It does not check that each payload decodes to data hashing to its chunk hash: that
// is what the caller vouches for. Bytes from outside the process (the HTTP server, any client
// upload) must go through PutXorb or PutXorbBytes, which verify every chunk; the server never calls
// this method.
//
// The xorb is recorded as uploaded to repository ns (uploads.go; nothing for ""), stored before or
// not: the session built it from the repository's data.
//
// x.Body is not retained after PutBuiltXorb returns. Concurrency: as PutXorb.
func (s *Store) PutBuiltXorb(ctx context.Context, ns string, x *xorb.Xorb) (bool, error) {
	name := xorbName(x.Hash)
	ok, err := s.be.Exists(ctx, name)
	if err != nil {
		return false, err
	}
	created := false
	if !ok {
		if err := checkBuilt(x); err != nil {
			return false, err
		}
		if created, err = s.storeXorb(ctx, x.Hash, x.Body, x.Footer(), len(x.Chunks), x.RawBytes); err != nil {
			return false, err
		}
	}
	_, err = s.recordUpload(ctx, Access{Repo: ns}, x.Hash, x.RawBytes)
	return created, err
}

// checkBuilt checks a built xorb's structure against its chunk infos (see PutBuiltXorb).
func checkBuilt(x *xorb.Xorb) error {
	h := x.Hash
	switch {
	case len(x.Chunks) == 0:
		return invalid("xorb %s: no chunks", h)
	case len(x.Chunks) > xorb.MaxChunks:
		return invalid("xorb %s: %d chunks exceed %d", h, len(x.Chunks), xorb.MaxChunks)
	case !xorb.WithinLimits(x.RawBytes, len(x.Body)):
		return invalid("xorb %s: %d raw bytes in %d serialized bytes exceed both %d raw and %d serialized",
			h, x.RawBytes, len(x.Body), xorb.MaxBytes, xorb.MaxSerializedBytes)
	case len(x.Body) > MaxXorbBodyBytes:
		return invalid("xorb %s: body of %d bytes exceeds %d", h, len(x.Body), MaxXorbBodyBytes)
	}
	var raw uint64
	var end uint32
	for i, c := range x.Chunks {
		if c.Start != end || c.End <= c.Start || int(c.End) > len(x.Body) || c.RawStart != raw ||
			c.RawLen == 0 || c.RawLen > xorb.MaxChunkRaw {
			return invalid("xorb %s: chunk %d: inconsistent record offsets", h, i)
		}
		rh, err := xorb.ParseRecordHeader(x.Body[c.Start:c.End])
		if err != nil {
			return invalid("xorb %s: chunk %d: %v", h, i, err)
		}
		if rh.RawLen != c.RawLen || rh.Scheme != c.Scheme || xorb.RecordHeaderSize+rh.CompressedLen != c.End-c.Start {
			return invalid("xorb %s: chunk %d: record header disagrees with the chunk info", h, i)
		}
		end = c.End
		raw += uint64(c.RawLen)
	}
	if int(end) != len(x.Body) || raw != x.RawBytes {
		return invalid("xorb %s: records length or raw size inconsistent", h)
	}
	if got := hash.Merkle(x.Entries()); got != h {
		return invalid("xorb hash mismatch: chunk infos hash to %s, not %s", got, h)
	}
	return nil
}

// storeXorb writes a validated xorb object (records, then the v1 footer). Its chunk index is not
// cached here: a long upload would fill the cache (40 bytes a chunk) for xorbs nobody reads yet.
func (s *Store) storeXorb(ctx context.Context, h hash.Hash, records []byte, foot *xorb.Footer, chunks int, raw uint64) (bool, error) {
	created, err := s.be.Create(ctx, xorbName(h), blob.NewBytesBlob(records, foot.AppendTo(nil)))
	if err != nil {
		return false, fmt.Errorf("storing xorb %s: %w", h, err)
	}
	if created {
		s.log.Debug().Str("xorb", h.String()).Int("chunks", chunks).Uint64("raw", raw).
			Int("bytes", len(records)).Msg("xorb stored")
	}
	return created, nil
}
