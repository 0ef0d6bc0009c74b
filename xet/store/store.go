// Package store is a strict Xet CAS kept on blob storage (blob.Backend: a directory, blob/fs, or an
// S3-compatible bucket, blob/s3). It validates and keeps xorbs (chunk records with a rebuilt v1
// footer) and shards, indexes files by Xet hash and by SHA-256 per repository namespace, indexes
// global-dedupe chunks, and plans file reconstructions in the CAS API's v2 shape.
//
// Blob names (all blobs immutable):
//
//	xorbs/<h[0:2]>/<xorb hash>        chunk records, then the XETBLOB v1 footer
//	files/<h[0:2]>/<file hash>        the file's reconstruction record (terms, size, SHA-256)
//	ns/<namespace>/sha256v/<hex>      SHA-256 -> file hash and size (verified)
//	ns/<namespace>/up/<xorb hash>     the namespace uploaded the xorb: its raw bytes (the upload
//	                                  record, uploads.go: read by the access rule and the usage)
//	dedupe/<h[0:2]>/<chunk hash>      global-dedupe chunk -> xorb hash
//	verified/<h[0:2]>/<file hash>     the SHA-256 the file's content was hashed to
//	ns/<namespace>/sha256/<hex>       SHA-256 -> file hash and size, not verified (over budget)
//	ns/<namespace>/files|shown/...    what else the repository may read and reference (access.go)
//	users/<user>/up/<xorb hash>       the user uploaded the xorb (access.go)
//
// Concurrency: a Store is safe for concurrent use, and several processes may open one directory at
// once. There is no shared mutable index: every entry is its own blob, created once (or, by two
// processes racing, twice with the same content), and visible whole or not at all.
package store

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/fs"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// ErrNotFound: no such xorb, file, SHA-256 mapping or dedupe chunk. It is blob.ErrNotFound, so a
// backend's "no such blob" matches it.
var ErrNotFound = blob.ErrNotFound

// missing is ErrNotFound for one entry, formatted only when printed: a dedupe query misses for most
// chunks, and most of those messages are never read.
type missing struct {
	what string
	h    hash.Hash
}

func (m missing) Error() string { return m.what + " " + m.h.String() + ": " + ErrNotFound.Error() }
func (m missing) Unwrap() error { return ErrNotFound }

// ErrRangeNotSatisfiable: the requested range starts at or after the end of the file.
var ErrRangeNotSatisfiable = errors.New("range not satisfiable")

// InvalidError is input the store rejects: a hash mismatch, a truncated or over-limit xorb, a shard
// naming a missing xorb or a wrong verification hash, and the like. Reason says what was wrong.
type InvalidError struct {
	Reason string
}

func (e *InvalidError) Error() string { return "invalid: " + e.Reason }

func invalid(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

// Options configures a Store.
type Options struct {
	Log zerolog.Logger
	// Now returns the current time (global-dedupe shard timestamps); time.Now when nil.
	Now func() time.Time
	// Backend replaces the filesystem backend on dir (blob/s3, tests). Optional.
	Backend blob.Backend
	// MetaCacheBytes bounds the in-memory cache of parsed xorb footers (default 64 MiB; an
	// embedded store in a client process should use EmbeddedMetaCacheBytes).
	MetaCacheBytes int64
	// EntryCacheBytes bounds the in-memory cache of index entries read (file records, SHA-256
	// mappings, dedupe entries). Default: 32 MiB on an object store, off on the filesystem (the
	// page cache serves those reads); negative turns it off.
	EntryCacheBytes int64
	// Observe is told of the store's work (backend calls, registrations, gc runs). Optional.
	Observe Observer
}

// Store is a Xet CAS on a blob.Backend. Safe for concurrent use; see the package doc.
type Store struct {
	be      blob.Backend // raw, or observed when Options.Observe is set
	raw     blob.Backend // the backend as given, for the roles only some have
	obs     Observer
	format  int
	log     zerolog.Logger
	now     func() time.Time
	meta    *lru[hash.Hash, *xorbMeta]
	entries *lru[string, []byte] // nil: off
	chains  *lru[hash.Hash, *chainState]
	waiting chainWaits             // xorbs whose run's state came after them (chain.go)
	work    chainWork              // the extensions of runs onto them
	grants  *lru[string, struct{}] // access entries seen to exist (access.go); never removed
	credits credits                // what each repository's uploads brought for checking (budget.go)
	hashed  atomic.Int64           // raw bytes read back and hashed for SHA-256 checks and runs
}

// ReadAtCloser is an open stored xorb object, read under the ctx it was opened with.
type ReadAtCloser interface {
	io.ReaderAt
	io.Closer
}

// Close stops the store's background work (the SHA-256 runs of xorbs that came out of order,
// chain.go) and lets go of what it holds for writing (blob.Backend.Close: blob/fs's pack), for a
// process about to exit. The store stays usable.
func (s *Store) Close() error {
	s.stopChains()
	return s.be.Close()
}

// Open opens (creating when missing) the store in dir. It reads the store's format version, refuses
// a newer one (ErrNewerFormat), and upgrades an older one to FormatVersion (upgrade.go: for a store
// of files registered before format 3, a walk of every repository's mappings), recording it.
func Open(dir string, opts Options) (*Store, error) {
	be := opts.Backend
	if be == nil {
		fsb, err := fs.New(dir, fs.Options{})
		if err != nil {
			return nil, err
		}
		be = fsb
	}
	where := dir
	if opts.Backend != nil {
		where = "on " + fmt.Sprintf("%T", opts.Backend)
	}
	format, err := checkFormat(be, where)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	limit := opts.MetaCacheBytes
	if limit <= 0 {
		limit = 64 << 20
	}
	raw, obs := be, opts.Observe
	if obs == nil {
		obs = nopObserver{}
	} else {
		be = observed{be, obs}
	}
	s := &Store{be: be, raw: raw, obs: obs, format: format, log: opts.Log, now: now, meta: newLRU[hash.Hash](limit, (*xorbMeta).cost),
		chains: newLRU[hash.Hash](chainStates, func(c *chainState) int64 { return int64(len(c.state)) + 128 }),
		grants: newLRU[string](grantCacheBytes, func(struct{}) int64 { return 160 })}
	entryLimit := opts.EntryCacheBytes
	if entryLimit == 0 && !be.Features().CachedReads {
		entryLimit = 32 << 20
	}
	if entryLimit > 0 {
		s.entries = newLRU[string](entryLimit, func(b []byte) int64 { return int64(len(b)) + 64 })
	}
	if s.format < FormatVersion {
		if s.format, err = NewMaint(s).upgrade(where, s.format); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// EmbeddedMetaCacheBytes is the footer cache for a store embedded in a client (the agent): enough
// for the xorbs of one large file's reconstruction, small beside the client's memory budget.
const EmbeddedMetaCacheBytes = 8 << 20

// Backend returns the storage under s.
func (s *Store) Backend() blob.Backend { return s.raw }

func fanout(kind string, h hash.Hash) string {
	str := h.String()
	return kind + "/" + str[:2] + "/" + str
}

func xorbName(h hash.Hash) string   { return fanout("xorbs", h) }
func fileName(h hash.Hash) string   { return fanout("files", h) }
func dedupeName(h hash.Hash) string { return fanout("dedupe", h) }

// verifiedName is the marker that file's content was hashed to a SHA-256 (the one it holds), in
// any repository: a later registration of the same file and SHA-256 needs no hashing.
func verifiedName(file hash.Hash) string { return fanout("verified", file) }

// nsDir maps a namespace (a repository name, or "" for the embedded store) to a safe single path
// element: "-" for "", else "n" + base64url of the name, or "h" + the hex of a BLAKE3 digest of the
// name when that would be too long for a file name.
func nsDir(ns string) string {
	if ns == "" {
		return "-"
	}
	enc := base64.RawURLEncoding.EncodeToString([]byte(ns))
	if len(enc) <= 200 {
		return "n" + enc
	}
	d := hash.Chunk([]byte(ns))
	return "h" + hex.EncodeToString(d[:])
}

// sha256Name is the oid -> file mapping taken on the uploader's word: what stores before verified
// mappings wrote, and what a registration whose SHA-256 check is over its budget writes (budget.go).
// The first one written stands; it is read only when no verified mapping exists, and never
// answered as "already stored".
func sha256Name(ns string, sha hash.Hash) string {
	d := sha.SHA256()
	return "ns/" + nsDir(ns) + "/sha256/" + hex.EncodeToString(d[:])
}

// sha256VerifiedName is the oid -> file mapping written only after the file's content was hashed
// to that SHA-256 (or built in this process from data so hashed): it can never name a wrong file,
// so the first one written stands.
func sha256VerifiedName(ns string, sha hash.Hash) string {
	d := sha.SHA256()
	return "ns/" + nsDir(ns) + "/sha256v/" + hex.EncodeToString(d[:])
}

// HasXorb reports whether the xorb is stored.
func (s *Store) HasXorb(ctx context.Context, h hash.Hash) (bool, error) {
	return s.be.Exists(ctx, xorbName(h))
}

// openXorbBlob opens the stored xorb h, moving it back from gc's trash when it is there (Collect).
func (s *Store) openXorbBlob(ctx context.Context, h hash.Hash) (blob.Blob, error) {
	b, err := s.be.Open(ctx, xorbName(h))
	if errors.Is(err, ErrNotFound) {
		if ok, rerr := s.restoreXorb(ctx, h); ok && rerr == nil {
			b, err = s.be.Open(ctx, xorbName(h))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("xorb %s: %w", h, err)
	}
	return b, nil
}

// OpenXorb returns the stored xorb object (chunk records first, footer after) for ranged reads. The
// records region is [0, recordsLen). A xorb that is a file of its own (blob.Filer) is handed out as
// its *os.File, so that a server can send its ranges with sendfile.
func (s *Store) OpenXorb(ctx context.Context, h hash.Hash) (ReadAtCloser, int64, error) {
	b, err := s.openXorbBlob(ctx, h)
	if err != nil {
		return nil, 0, err
	}
	m, err := s.xorbMetaFrom(ctx, h, b)
	if err != nil {
		b.Close()
		return nil, 0, err
	}
	if f, ok := b.(blob.Filer); ok {
		return f.File(), int64(m.recordsLen()), nil // the file itself: the server's sendfile
	}
	return struct {
		io.ReaderAt
		io.Closer
	}{blob.ReaderAt(ctx, b), b}, int64(m.recordsLen()), nil
}

// XorbSection streams bytes [off, off+n) of stored xorb h's records region, as one sequential
// reader wants them (blob.Blob.Section): a long range of a xorb that is a file of its own is read
// with O_DIRECT, straight into an aligned buffer. Xorbs are written with O_DIRECT, so a download
// soon after a push would otherwise fill the page cache page by page, several times the CPU of the
// read itself (the embedded store's downloads). A range outside the records is refused.
func (s *Store) XorbSection(ctx context.Context, h hash.Hash, off, n int64) (io.ReadCloser, error) {
	b, err := s.openXorbBlob(ctx, h)
	if err != nil {
		return nil, err
	}
	m, err := s.xorbMetaFrom(ctx, h, b)
	if err != nil {
		b.Close()
		return nil, err
	}
	if off < 0 || n < 0 || off+n > int64(m.recordsLen()) {
		b.Close()
		return nil, fmt.Errorf("xorb %s: range %d+%d outside its %d record bytes", h, off, n, m.recordsLen())
	}
	rc, err := b.Section(ctx, off, n)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("xorb %s: %w", h, err)
	}
	return &sectionBlob{ReadCloser: rc, b: b}, nil
}

// sectionBlob is a section reader that closes its blob too.
type sectionBlob struct {
	io.ReadCloser
	b blob.Blob
}

func (s *sectionBlob) Close() error {
	err := s.ReadCloser.Close()
	if berr := s.b.Close(); err == nil {
		err = berr
	}
	return err
}

// XorbFooter returns the footer of stored xorb h (chunk hashes, record ends, raw ends) as the store
// keeps it after the records, from the cache of parsed footers when there. ErrNotFound when missing.
// The slices are shared with the cache: the caller does not change them.
func (s *Store) XorbFooter(ctx context.Context, h hash.Hash) (*xorb.Footer, error) {
	m, err := s.xorbMeta(ctx, h)
	if err != nil {
		return nil, err
	}
	return &xorb.Footer{Version: 1, Hash: h, ChunkHashes: m.hashes, BoundaryEnds: m.boundEnds, RawEnds: m.rawEnds}, nil
}
