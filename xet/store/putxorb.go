package store

import (
	"context"
	"errors"
	"fmt"
	gohash "hash"
	"io"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/bufpool"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// MaxXorbBodyBytes bounds an uploaded xorb body: 64 MiB of raw data stored uncompressed, an 8-byte
// header per chunk, and 1 MiB of slack for payloads a client compressed badly. Longer bodies are
// rejected before they are parsed.
const MaxXorbBodyBytes = xorb.MaxBytes + xorb.MaxChunks*xorb.RecordHeaderSize + 1<<20

// PutXorb validates and stores a xorb uploaded as chunk records (a trailing footer is tolerated and
// replaced). Every chunk is decoded and hashed, and the xorb hash recomputed; a mismatch, a record over
// the limits, more than 8192 chunks or 64 MiB of raw data, or a truncated body is an *InvalidError.
// The stored object is the records followed by a rebuilt v1 footer. inserted=false when the xorb was
// already stored. A valid upload of a xorb already stored is also the moment to check the stored
// copy (verifyXorb): a damaged one is moved aside and replaced by the upload (the repair a user
// gets by pushing the data again), and the upload reports inserted=true.
//
// Concurrency: safe for concurrent and cross-process use; of several puts of one xorb exactly one
// reports inserted=true (on filesystems with hard links).
func (s *Store) PutXorb(ctx context.Context, h hash.Hash, body io.Reader) (bool, error) {
	return s.PutXorbFollowing(ctx, h, body, xorb.Follows{})
}

// PutXorbFollowing is PutXorb with the client's hint of where the xorb's raw bytes sit in a file
// (lfsbatch.HeaderXorbFollows); with a hint the raw bytes are also hashed into the file's SHA-256
// run (see chainState in chain.go).
func (s *Store) PutXorbFollowing(ctx context.Context, h hash.Hash, body io.Reader, f xorb.Follows) (bool, error) {
	up, err := s.PutXorbAs(ctx, Access{}, h, body, f)
	return up.Inserted, err
}

// XorbUpload is what PutXorbAs did with an upload.
type XorbUpload struct {
	// Inserted: this call stored the xorb (it was not stored, or a damaged copy was replaced).
	Inserted bool
	// Recorded: this call wrote the repository's upload record (uploads.go), so the xorb counts
	// whole against the repository from now on; false when it was recorded before, or for the
	// whole store. Of several uploads of one xorb to one repository, exactly one reports it.
	Recorded bool
	// Counted: this call made the repository's usage count the xorb's raw bytes, which it did not
	// count before: it wrote the record (Recorded), or, when the caller asked for admission, the
	// record named a xorb the store no longer kept (gc deleted it: the usage counts a xorb only while
	// it is kept) and this call stored it again. Several uploads of such a xorb at once may each
	// report it (counting it twice until the usage is read again errs on the side of the quota).
	Counted bool
	// RawBytes is the xorb's raw (uncompressed) size.
	RawBytes uint64
}

// PutXorbAs is PutXorbFollowing for an upload by a: once the body proved to be the xorb (new, or
// the same as the stored one), the repository's upload record and the user's grant are written
// (the repository and the user may reference its chunks, access.go; the repository's usage counts
// it, stats.go) and the repository is credited the raw bytes checked, for the SHA-256 checks of
// its next registrations (budget.go).
func (s *Store) PutXorbAs(ctx context.Context, a Access, h hash.Hash, body io.Reader, f xorb.Follows) (XorbUpload, error) {
	return s.PutXorbAdmitted(ctx, a, h, body, f, nil)
}

// PutXorbAdmitted is PutXorbAs that first asks admit (when set) whether a's repository may take
// the xorb's raw bytes: once the body proved to be the xorb, before anything of it is recorded or
// visible, and only when the repository has no upload record of it yet (the record makes its usage
// count the raw bytes, stats.go). A body's bytes say little of them: compressed records of 64 MiB
// may hold 1 GiB raw (xorb.WithinLimits). admit's error fails the upload as it returned it.
func (s *Store) PutXorbAdmitted(ctx context.Context, a Access, h hash.Hash, body io.Reader, f xorb.Follows, admit func(raw uint64) error) (XorbUpload, error) {
	var up XorbUpload
	// The upload is recorded as soon as the body proved to be the xorb, before the xorb becomes
	// visible: a process killed after storing it must not leave a xorb this repository sent and
	// may not name, which its next push would have to send again.
	proved := func(raw uint64) (err error) {
		again, err := s.admitUpload(ctx, a, h, raw, admit)
		if err != nil {
			return err
		}
		up.RawBytes = raw
		up.Recorded, err = s.recordUpload(ctx, a, h, raw)
		up.Counted = up.Recorded || again
		return err
	}
	inserted, raw, err := s.putXorb(ctx, h, body, f, proved)
	if err != nil {
		return XorbUpload{}, err
	}
	up.Inserted = inserted
	s.credits.add(a.Repo, int64(raw), s.now())
	return up, nil
}

// admitUpload asks admit whether a's repository may take the raw bytes of xorb h, unless its
// usage counts them already (or admit is nil): it uploaded h before (its upload record) and the
// store keeps h, stored or in gc's trash. A record outlives the xorb gc deleted, which the usage
// no longer counts: again reports that this upload, admitted, makes it count it once more.
func (s *Store) admitUpload(ctx context.Context, a Access, h hash.Hash, raw uint64, admit func(uint64) error) (again bool, err error) {
	if admit == nil || a.whole() {
		return false, nil
	}
	had, err := s.be.Exists(ctx, uploadName(a.Repo, h))
	if err != nil {
		return false, fmt.Errorf("xorb %s: looking for its upload record: %w", h, err)
	}
	if had {
		kept, err := s.keepsXorb(ctx, h)
		if err != nil {
			return false, fmt.Errorf("xorb %s: %w", h, err)
		}
		if kept {
			return false, nil
		}
	}
	return had, admit(raw)
}

// putXorb validates and stores the xorb (PutXorbFollowing) and returns its raw size. proved, when
// set, is called once the body has proved to be the xorb and before the xorb becomes visible; its
// failure fails the upload.
func (s *Store) putXorb(ctx context.Context, h hash.Hash, body io.Reader, f xorb.Follows, proved func(raw uint64) error) (bool, uint64, error) {
	exists, err := s.be.Exists(ctx, xorbName(h))
	if err != nil {
		return false, 0, err
	}
	sha, prevID := s.chainHasher(f)
	var onRaw func([]byte)
	if sha != nil {
		onRaw = func(raw []byte) { sha.Write(raw) }
	}
	if l, ok := body.(interface{ Len() int }); ok && !exists && l.Len() >= streamMin {
		if s.be.Features().StreamsCreates {
			if l.Len() > MaxXorbBodyBytes {
				return false, 0, invalid("xorb %s: body of %d bytes exceeds %d", h, l.Len(), MaxXorbBodyBytes)
			}
			created, info, err := s.putXorbStream(ctx, h, body, l.Len(), onRaw, proved)
			if err != nil {
				return false, 0, err
			}
			s.chainOn(h, f, prevID, len(info.Chunks), sha)
			return created, info.RawBytes, nil
		}
	}
	data, err := readBounded(body, MaxXorbBodyBytes)
	if err != nil {
		return false, 0, fmt.Errorf("xorb %s: %w", h, err)
	}
	defer recvBufs.Put(data) // nothing keeps the body once it is stored
	info, err := validateXorb(h, data, onRaw)
	if err != nil {
		return false, 0, err
	}
	if proved != nil {
		if err := proved(info.RawBytes); err != nil {
			return false, 0, err
		}
	}
	created := false
	if exists {
		created, err = s.replaceDamaged(ctx, h)
	}
	if err == nil && (!exists || created) {
		created, err = s.storeXorb(ctx, h, data[:info.RecordsLen], footerOf(h, info), len(info.Chunks), info.RawBytes)
	}
	if err != nil {
		return false, 0, err
	}
	s.chainOn(h, f, prevID, len(info.Chunks), sha)
	return created, info.RawBytes, nil
}

// chainOn records the SHA-256 run of stored xorb h under hint f: its state when it was hashed on
// arrival (sha), else, when the xorb it follows had no state yet, a wait for that state.
func (s *Store) chainOn(h hash.Hash, f xorb.Follows, prevID hash.Hash, chunks int, sha gohash.Hash) {
	switch {
	case sha != nil:
		s.keepChain(h, prevID, chunks, sha)
	case !f.Start && f.Prev != hash.Hash{}:
		s.chainWait(f.Prev, h, chunks)
	}
}

// validateAndStoreXorb fully validates a xorb body (ValidateXorb) and stores it with its footer.
func (s *Store) validateAndStoreXorb(ctx context.Context, h hash.Hash, data []byte) (bool, error) {
	info, err := ValidateXorb(h, data)
	if err != nil {
		return false, err
	}
	return s.storeXorb(ctx, h, data[:info.RecordsLen], footerOf(h, info), len(info.Chunks), info.RawBytes)
}

// ValidateXorb parses a xorb body (chunk records, optionally followed by a footer), decodes and
// hashes every chunk, and checks the limits and that the body hashes to h. Errors are *InvalidError.
func ValidateXorb(h hash.Hash, data []byte) (*xorb.Info, error) { return validateXorb(h, data, nil) }

// validateXorb is ValidateXorb, handing each chunk's raw bytes to onRaw (when set) as it goes.
func validateXorb(h hash.Hash, data []byte, onRaw func([]byte)) (*xorb.Info, error) {
	if len(data) > MaxXorbBodyBytes {
		return nil, invalid("xorb %s: body of %d bytes exceeds %d", h, len(data), MaxXorbBodyBytes)
	}
	info, err := xorb.IndexWith(data, xorb.IndexOptions{OnRaw: onRaw})
	if err != nil {
		return nil, invalid("xorb %s: %v", h, err)
	}
	if err := checkXorbInfo(h, info); err != nil {
		return nil, err
	}
	return info, nil
}

// checkXorbInfo checks what a xorb body held against the limits and the hash it was uploaded as.
func checkXorbInfo(h hash.Hash, info *xorb.Info) error {
	switch {
	case len(info.Chunks) == 0:
		return invalid("xorb %s: no chunks", h)
	case len(info.Chunks) > xorb.MaxChunks:
		return invalid("xorb %s: %d chunks exceed %d", h, len(info.Chunks), xorb.MaxChunks)
	case !xorb.WithinLimits(info.RawBytes, info.RecordsLen):
		return invalid("xorb %s: %d raw bytes in %d serialized bytes exceed both %d raw and %d serialized",
			h, info.RawBytes, info.RecordsLen, xorb.MaxBytes, xorb.MaxSerializedBytes)
	case info.RecordsLen <= 0:
		return invalid("xorb %s: bad records length %d", h, info.RecordsLen)
	case info.Hash != h:
		return invalid("xorb hash mismatch: body hashes to %s, not %s", info.Hash, h)
	}
	var raw uint64
	var end uint32
	for i, c := range info.Chunks {
		if c.Start != end || c.End <= c.Start || c.RawStart != raw || c.RawLen == 0 || c.RawLen > xorb.MaxChunkRaw {
			return invalid("xorb %s: chunk %d: inconsistent record offsets", h, i)
		}
		end = c.End
		raw += uint64(c.RawLen)
	}
	if int(end) != info.RecordsLen || raw != info.RawBytes {
		return invalid("xorb %s: records length or raw size inconsistent", h)
	}
	return nil
}

// footerOf builds the v1 footer of a validated xorb.
func footerOf(h hash.Hash, info *xorb.Info) *xorb.Footer {
	f := &xorb.Footer{
		Version:      1,
		Hash:         h,
		ChunkHashes:  make([]hash.Hash, len(info.Chunks)),
		BoundaryEnds: make([]uint32, len(info.Chunks)),
		RawEnds:      make([]uint32, len(info.Chunks)),
	}
	for i, c := range info.Chunks {
		f.ChunkHashes[i] = c.Hash
		f.BoundaryEnds[i] = c.End
		f.RawEnds[i] = uint32(c.RawStart) + c.RawLen
	}
	return f
}

// readBounded reads r to the end, failing with *InvalidError when it holds more than limit bytes.
// The buffer comes from recvBuf; the caller puts it back in recvBufs once done, and readBounded
// does when it fails.
func readBounded(r io.Reader, limit int) ([]byte, error) {
	size := 64 << 10
	if l, ok := r.(interface{ Len() int }); ok {
		size = min(l.Len(), limit) + 1
	}
	buf := recvBuf(size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			recvBufs.Put(buf)
			return nil, invalid("body exceeds %d bytes", limit)
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			recvBufs.Put(buf) // a mapped buffer must not be dropped (the GC does not unmap it)
			return nil, fmt.Errorf("reading body: %w", err)
		}
	}
}

// recvBufs keeps the receive buffers of large xorb uploads for the next ones. A fresh 64 MiB
// buffer per upload is memory the kernel must fault in and zero page by page; a recycled one is
// already mapped. At most 4 are kept, and none once the server has received no large upload for
// 30 s. New ones are mapped in huge pages where the platform allows (bufpool.Map), which fault in
// with far fewer faults.
var recvBufs = &bufpool.Pool{Keep: 4, Idle: 30 * time.Second, Min: recvMin, Release: bufpool.Unmap}

// recvMin: smaller bodies get a buffer of their own size, not a recycled one.
const recvMin = 8 << 20

// recvBuf returns an empty buffer of capacity at least size for a body.
func recvBuf(size int) []byte {
	if size < recvMin {
		return make([]byte, 0, size)
	}
	if b := recvBufs.Get(size); b != nil {
		return b
	}
	// Sized for any xorb, so that a kept buffer serves every later upload.
	n := max(size, MaxXorbBodyBytes+1)
	if b := bufpool.Map(n); b != nil {
		return b
	}
	return make([]byte, 0, n)
}
