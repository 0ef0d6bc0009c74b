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
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// CAS is the embedded CAS: a cas.Client over a *store.Store in this process. Shards are registered
// under namespace ns. Safe for concurrent use (the store is).
//
// Small xorbs are held back (store.PrepareBuiltXorb) and stored in the batch of the first shard that
// lists them, so a small file costs one fsync, not two; they count as held by this CAS (HasXorb)
// from PutXorb on. Held-back xorbs are stored at once when they pass maxPendingBytes.
type CAS struct {
	s  *store.Store
	ns string

	mu           sync.Mutex
	pending      map[hash.Hash]*store.PendingXorb
	pendingBytes int
}

// maxPendingBytes bounds the small xorbs held back for their shards (a session that fails before
// its shard leaves them here until they are stored with this bound or forgotten with the CAS).
const maxPendingBytes = 16 << 20

// New returns the client of store s, registering files under namespace ns ("" for the embedded
// store of a repository).
func New(s *store.Store, ns string) *CAS {
	return &CAS{s: s, ns: ns, pending: map[hash.Hash]*store.PendingXorb{}}
}

// Store returns the store under l.
func (l *CAS) Store() *store.Store { return l.s }

// notFound is cas.ErrNotFound for a store error that is store.ErrNotFound, formatted only when
// printed (most dedupe queries miss).
type notFound struct{ err error }

func (n notFound) Error() string   { return cas.ErrNotFound.Error() + ": " + n.err.Error() }
func (n notFound) Unwrap() []error { return []error{cas.ErrNotFound, n.err} }

// mapErr turns the store's sentinel errors into this package's.
func mapErr(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound{err}
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
	if len(x.Lent) != 0 { // the store takes a whole body (uploads to it do not lend: see upload.Config.Lend)
		body, err := x.Serialized()
		if err != nil {
			return false, err
		}
		x = &xorb.Xorb{Hash: x.Hash, Body: body, Chunks: x.Chunks, RawBytes: x.RawBytes}
	}
	if len(x.Body) <= store.MaxPendingXorb/2 {
		return l.holdBack(ctx, x)
	}
	ok, err := l.s.PutBuiltXorb(ctx, l.ns, x)
	if err != nil {
		return false, fmt.Errorf("store xorb %s: %w", x.Hash, err)
	}
	return ok, nil
}

// PutShard registers the files of a shard built in this process by an upload session, which
// computed each file's SHA-256 from the data it chunked: the store's trusted path
// (store.PutShardTrusted) does not read the files back to hash them again.
func (l *CAS) PutShard(ctx context.Context, body []byte) error {
	var used []hash.Hash
	take := func(h hash.Hash) *store.PendingXorb {
		l.mu.Lock()
		defer l.mu.Unlock()
		p := l.pending[h]
		if p != nil {
			used = append(used, h)
		}
		return p
	}
	if _, err := l.s.PutShardWithXorbs(ctx, l.ns, body, take); err != nil {
		return fmt.Errorf("store shard: %w", err)
	}
	l.mu.Lock()
	for _, h := range used {
		if p := l.pending[h]; p != nil {
			l.pendingBytes -= p.Size()
			delete(l.pending, h)
		}
	}
	l.mu.Unlock()
	return nil
}

// holdBack keeps a small built xorb for the batch of its shard; past maxPendingBytes, everything
// held back is stored now.
func (l *CAS) holdBack(ctx context.Context, x *xorb.Xorb) (bool, error) {
	p, err := store.PrepareBuiltXorb(x)
	if err != nil {
		return false, fmt.Errorf("store xorb %s: %w", x.Hash, err)
	}
	if ok, err := l.HasXorb(ctx, x.Hash); ok || err != nil {
		return false, err
	}
	l.mu.Lock()
	if l.pending[x.Hash] != nil {
		l.mu.Unlock()
		return false, nil
	}
	l.pending[x.Hash] = p
	l.pendingBytes += p.Size()
	var flush []*store.PendingXorb
	if l.pendingBytes > maxPendingBytes {
		for h, q := range l.pending {
			flush = append(flush, q)
			delete(l.pending, h)
		}
		l.pendingBytes = 0
	}
	l.mu.Unlock()
	if len(flush) > 0 {
		if err := l.s.PutPendingXorbs(ctx, l.ns, flush); err != nil {
			return false, fmt.Errorf("store xorb %s: %w", x.Hash, err)
		}
	}
	return true, nil
}

// HasXorb asks the store; a xorb held back for its shard counts as held.
func (l *CAS) HasXorb(ctx context.Context, x hash.Hash) (bool, error) {
	l.mu.Lock()
	p := l.pending[x]
	l.mu.Unlock()
	if p != nil {
		return true, nil
	}
	return l.s.HasXorb(ctx, x)
}

// Reconstruct plans a file from the store; fetch URLs are empty (Fetch reads the store).
func (l *CAS) Reconstruct(ctx context.Context, file hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	p, err := l.s.Reconstruct(ctx, file, rng)
	if err != nil {
		return nil, mapErr(fmt.Errorf("reconstruct %s: %w", file, err))
	}
	return p, nil
}

// Fetch reads bytes r of xorb's records region from the store, as one stream (Store.XorbSection:
// a long range without filling the page cache).
func (l *CAS) Fetch(ctx context.Context, x hash.Hash, _ casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	if r.End < r.Start {
		return nil, fmt.Errorf("fetch xorb %s: range %d-%d ends before it starts", x, r.Start, r.End)
	}
	rc, err := l.s.XorbSection(ctx, x, int64(r.Start), int64(r.Len()))
	if err != nil {
		return nil, mapErr(fmt.Errorf("fetch xorb %s: %w", x, err))
	}
	return rc, nil
}

// XorbFooter returns the footer the store keeps after x's records (from its cache of parsed
// footers).
func (l *CAS) XorbFooter(ctx context.Context, x hash.Hash, _ casapi.XorbFetch) (*xorb.Footer, error) {
	f, err := l.s.XorbFooter(ctx, x)
	if err != nil {
		return nil, mapErr(fmt.Errorf("xorb %s footer: %w", x, err))
	}
	return f, nil
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

// LookupVerifiedSHA256 is LookupSHA256 for mappings whose file the store hashed to the SHA-256
// when it was registered (store.LookupVerifiedSHA256); not an older store's unchecked ones.
func (l *CAS) LookupVerifiedSHA256(ctx context.Context, sha hash.Hash) (file hash.Hash, size uint64, err error) {
	file, size, err = l.s.LookupVerifiedSHA256(ctx, l.ns, sha)
	if err != nil {
		return hash.Zero, 0, mapErr(err)
	}
	return file, size, nil
}

var _ cas.Client = (*CAS)(nil)
