package cas

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Local is the embedded CAS: a Client over a *store.Store in this process (a directory, no server).
// Shards are registered under namespace ns. Safe for concurrent use (the store is).
type Local struct {
	s  *store.Store
	ns string
}

// NewLocal returns the Client of store s, registering files under namespace ns ("" for the
// embedded store).
func NewLocal(s *store.Store, ns string) *Local { return &Local{s: s, ns: ns} }

// Store returns the store under l.
func (l *Local) Store() *store.Store { return l.s }

// mapErr turns the store's sentinel errors into this package's.
func mapErr(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, store.ErrRangeNotSatisfiable):
		return fmt.Errorf("%w: %w", ErrRangeNotSatisfiable, err)
	}
	return err
}

// QueryChunk returns the store's global-dedupe shard for chunk, or ErrNotFound.
func (l *Local) QueryChunk(ctx context.Context, chunk hash.Hash) ([]byte, error) {
	b, err := l.s.GlobalDedupe(ctx, chunk)
	if err != nil {
		return nil, mapErr(err)
	}
	return b, nil
}

// PutXorb stores a xorb (the store validates it against h, decoding and hashing every chunk).
func (l *Local) PutXorb(ctx context.Context, h hash.Hash, body []byte) (bool, error) {
	ok, err := l.s.PutXorbBytes(ctx, h, body)
	if err != nil {
		return false, fmt.Errorf("store xorb %s: %w", h, err)
	}
	return ok, nil
}

// PutBuiltXorb stores a xorb built by xorb.Builder in this process through the store's trusted
// path (store.PutBuiltXorb): its chunks are not decoded and hashed again. x.Body is not retained.
func (l *Local) PutBuiltXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	ok, err := l.s.PutBuiltXorb(ctx, x)
	if err != nil {
		return false, fmt.Errorf("store xorb %s: %w", x.Hash, err)
	}
	return ok, nil
}

// ReleasesXorbBody: the store has written the body when a put returns (see cas.ReleasesXorbBody).
func (l *Local) ReleasesXorbBody() bool { return true }

// InProcess: Local serves from a store in this process (see cas.InProcess).
func (l *Local) InProcess() bool { return true }

// PutShard registers the files of an upload-form shard.
func (l *Local) PutShard(ctx context.Context, body []byte) error {
	if _, err := l.s.PutShard(ctx, l.ns, body); err != nil {
		return fmt.Errorf("store shard: %w", err)
	}
	return nil
}

// Reconstruct plans a file from the store; fetch URLs are empty (Fetch reads the store).
func (l *Local) Reconstruct(ctx context.Context, file hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	p, err := l.s.Reconstruct(ctx, file, rng)
	if err != nil {
		return nil, mapErr(fmt.Errorf("reconstruct %s: %w", file, err))
	}
	return p, nil
}

// Fetch reads bytes r of xorb's records region from the store.
func (l *Local) Fetch(ctx context.Context, x hash.Hash, _ casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	f, recordsLen, err := l.s.OpenXorb(ctx, x)
	if err != nil {
		return nil, mapErr(fmt.Errorf("open xorb %s: %w", x, err))
	}
	if r.End < r.Start || r.End >= uint64(recordsLen) {
		f.Close()
		return nil, fmt.Errorf("fetch xorb %s: range %d-%d outside its %d record bytes", x, r.Start, r.End, recordsLen)
	}
	return &sectionCloser{SectionReader: io.NewSectionReader(f, int64(r.Start), int64(r.Len())), c: f}, nil
}

// LookupSHA256 finds the Xet file registered with this SHA-256 (an LFS oid) in l's namespace.
// sha is in the hash.FromSHA256 form (hash.ParseSHA256 of the oid).
func (l *Local) LookupSHA256(ctx context.Context, sha hash.Hash) (file hash.Hash, size uint64, err error) {
	file, size, err = l.s.LookupSHA256(ctx, l.ns, sha)
	if err != nil {
		return hash.Zero, 0, mapErr(err)
	}
	return file, size, nil
}

type sectionCloser struct {
	*io.SectionReader
	c io.Closer
}

func (s *sectionCloser) Close() error { return s.c.Close() }

var (
	_ Client          = (*Local)(nil)
	_ BuiltXorbPutter = (*Local)(nil)
)
