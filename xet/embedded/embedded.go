// Package embedded is the in-process CAS: a cas.Client over a *store.Store (a directory, no server).
// The agent uses it for remotes on this machine, and xet-server for the uploads it chunks itself
// (basic transfers). It sits beside the store so that xet/cas, what clients ask of any CAS, does not
// depend on the store.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// CAS is the embedded CAS: a cas.Client over a *store.Store in this process. Shards are registered
// under namespace ns. Safe for concurrent use (the store is).
type CAS struct {
	s  *store.Store
	ns string
}

// New returns the client of store s, registering files under namespace ns ("" for the embedded
// store of a repository).
func New(s *store.Store, ns string) *CAS { return &CAS{s: s, ns: ns} }

// Store returns the store under l.
func (l *CAS) Store() *store.Store { return l.s }

// mapErr turns the store's sentinel errors into this package's.
func mapErr(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %w", cas.ErrNotFound, err)
	case errors.Is(err, store.ErrRangeNotSatisfiable):
		return fmt.Errorf("%w: %w", cas.ErrRangeNotSatisfiable, err)
	}
	return err
}

// QueryChunk returns the store's global-dedupe shard for chunk, or cas.ErrNotFound.
func (l *CAS) QueryChunk(ctx context.Context, chunk hash.Hash) ([]byte, error) {
	b, err := l.s.GlobalDedupe(ctx, chunk)
	if err != nil {
		return nil, mapErr(err)
	}
	return b, nil
}

// PutXorb stores a xorb built by xorb.Builder in this process through the store's trusted path
// (store.PutBuiltXorb): its chunks are not decoded and hashed again, only checked against the
// builder's chunk list. The store has written x.Body when PutXorb returns and does not keep it.
func (l *CAS) PutXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	ok, err := l.s.PutBuiltXorb(ctx, x)
	if err != nil {
		return false, fmt.Errorf("store xorb %s: %w", x.Hash, err)
	}
	return ok, nil
}

// PutShard registers the files of a shard built in this process by an upload session, which
// computed each file's SHA-256 from the data it chunked: the store's trusted path
// (store.PutShardTrusted) does not read the files back to hash them again.
// HasXorb asks the store.
func (l *CAS) HasXorb(ctx context.Context, x hash.Hash) (bool, error) { return l.s.HasXorb(ctx, x) }

func (l *CAS) PutShard(ctx context.Context, body []byte) error {
	if _, err := l.s.PutShardTrusted(ctx, l.ns, body); err != nil {
		return fmt.Errorf("store shard: %w", err)
	}
	return nil
}

// Reconstruct plans a file from the store; fetch URLs are empty (Fetch reads the store).
func (l *CAS) Reconstruct(ctx context.Context, file hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	p, err := l.s.Reconstruct(ctx, file, rng)
	if err != nil {
		return nil, mapErr(fmt.Errorf("reconstruct %s: %w", file, err))
	}
	return p, nil
}

// Fetch reads bytes r of xorb's records region from the store.
func (l *CAS) Fetch(ctx context.Context, x hash.Hash, _ casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
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
func (l *CAS) LookupSHA256(ctx context.Context, sha hash.Hash) (file hash.Hash, size uint64, err error) {
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

var _ cas.Client = (*CAS)(nil)
