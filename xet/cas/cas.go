// Package cas holds what the upload and download code ask of a Xet CAS (content-addressed store),
// as one interface (Client), and its network implementation HTTP: the CAS API with bearer tokens,
// retries and v2→v1 fallbacks. The in-process implementation over xet/store is xet/embedded.
package cas

import (
	"context"
	"errors"
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/internal/buildinfo"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// DefaultUserAgent is the User-Agent sent when HTTPOptions.UserAgent is empty: the binary's version,
// commit, commit time and platform (internal/buildinfo), e.g.
// "git-xet-transfer/v1.2.3 (commit 0123456789ab, 2026-11-27T10:00:00Z; linux/amd64; go1.26.8)".
func DefaultUserAgent() string { return buildinfo.Get().UserAgent("git-xet-transfer") }

var (
	// ErrNotFound: the CAS does not hold the file, xorb or chunk asked for (a dedupe miss included).
	ErrNotFound = errors.New("cas: not found")
	// ErrURLExpired: a Fetch got 403 from a signed URL; the caller re-plans the reconstruction once.
	ErrURLExpired = errors.New("cas: signed URL expired or refused (403)")
	// ErrRangeNotSatisfiable: a reconstruction was asked for a range starting at or past the end of
	// the file (HTTP 416).
	ErrRangeNotSatisfiable = errors.New("cas: range not satisfiable")
	// ErrNoFooter: the CAS does not offer the footer of a xorb through its fetch URL (the caller
	// fetches whole ranges, as listed in the plan, instead).
	ErrNoFooter = errors.New("cas: xorb footer not offered")
)

// Client is what the upload and download code need from a CAS. Implementations are safe for
// concurrent use by many goroutines.
type Client interface {
	// QueryChunk asks for a global-dedupe shard of the xorbs holding chunk (keyed chunk hashes,
	// with footer). ErrNotFound on a miss.
	QueryChunk(ctx context.Context, chunk hash.Hash) ([]byte, error)
	// PutXorb stores the xorb x, built by xorb.Builder in this process: its serialized body (chunk
	// records only, no footer: x.Body with any lent payloads read from x.Src) under x.Hash. A CAS
	// over the network sends the body and verifies it on its side; one in this process may trust
	// x.Chunks instead of hashing the data again. An implementation neither reads nor keeps x.Body
	// nor reads x.Src once PutXorb returns, so the caller may reuse the buffer and close the file.
	PutXorb(ctx context.Context, x *xorb.Xorb) (inserted bool, err error)
	// HasXorb reports whether the CAS holds xorb x (so a resumed upload need not send it again).
	// false with a nil error also when the CAS cannot tell (it has no existence query).
	HasXorb(ctx context.Context, x hash.Hash) (bool, error)
	// PutShard registers the files of an upload-form shard; every xorb it names must be stored.
	PutShard(ctx context.Context, body []byte) error
	// Reconstruct returns the plan of a file (the whole file when rng is nil). ErrNotFound when
	// the CAS does not know the file.
	Reconstruct(ctx context.Context, file hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error)
	// Fetch returns the bytes r (inclusive) of a xorb fetch (URL from the plan, or the local
	// store). The body yields exactly r.Len() bytes or fails; the caller closes it.
	Fetch(ctx context.Context, xorb hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error)
	// XorbFooter returns the footer of a xorb (its chunk hashes and where each chunk's record ends)
	// through a fetch of the plan, so a download can fetch single chunks of a listed range. It is
	// checked (xorb.ReadFooter: lengths, rising offsets; the xorb hash it names) but not trusted:
	// every chunk fetched with it is still hashed. ErrNoFooter (wrapped) when the CAS does not
	// offer it.
	XorbFooter(ctx context.Context, xorb hash.Hash, f casapi.XorbFetch) (*xorb.Footer, error)
}
