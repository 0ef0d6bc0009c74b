package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// recordOf is the stored form of a test file's terms.
func recordOf(f *testFile) *fileRecord {
	rec := &fileRecord{}
	for _, t := range f.file.Terms {
		rec.Terms = append(rec.Terms, fileTerm{Xorb: t.Xorb, UnpackedBytes: t.UnpackedBytes, Start: t.ChunkStart, End: t.ChunkEnd})
	}
	return rec
}

// Xorbs uploaded with hints of where they sit in a file are hashed into the file's SHA-256 as they
// arrive: the registration's check starts from the state after the longest run of the file's
// first terms that the hints cover, whole xorbs in the order hashed, and reads only the rest. A
// hint that does not match the file (a partial term, another order, a xorb hinted as a file's
// start) covers nothing past it, and the SHA-256 is right whatever the hints said.
func TestSHA256HashedOnArrival(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	s := openStore(t)
	xa, xb, xc := r.xorb(0, 1, 2), r.xorb(3, 4, 5), r.xorb(6, 7)
	xd := r.xorb(8, 9) // hinted to follow xa, but files put it after xc
	put := func(x *testXorb, f xorb.Follows) {
		t.Helper()
		if _, err := s.PutXorbFollowing(ctx, x.hash, bytes.NewReader(x.body), f); err != nil {
			t.Fatal(err)
		}
	}
	put(xa, xorb.Follows{Start: true})
	put(xb, xorb.Follows{Prev: xa.hash})
	put(xc, xorb.Follows{Prev: xb.hash})
	put(xd, xorb.Follows{Prev: xa.hash})
	xe := r.xorb(1, 2)
	put(xe, xorb.Follows{Prev: hash.Hash{7}}) // follows nothing known: no state

	for _, tc := range []struct {
		name string
		file *testFile
		want int
	}{
		{"the hinted run", r.file(seg{xa, 0, 3}, seg{xb, 0, 3}, seg{xc, 0, 2}), 3},
		{"then a xorb hinted elsewhere", r.file(seg{xa, 0, 3}, seg{xb, 0, 3}, seg{xc, 0, 2}, seg{xd, 0, 2}), 3},
		{"a partial first term", r.file(seg{xa, 0, 2}, seg{xb, 0, 3}), 0},
		{"a xorb that does not begin a file", r.file(seg{xb, 0, 3}, seg{xc, 0, 2}), 0},
		{"another order", r.file(seg{xa, 0, 3}, seg{xc, 0, 2}, seg{xb, 0, 3}), 1},
		{"the other branch", r.file(seg{xa, 0, 3}, seg{xd, 0, 2}), 2},
		{"a xorb with an unknown predecessor", r.file(seg{xa, 0, 3}, seg{xe, 0, 2}), 1},
	} {
		rec := recordOf(tc.file)
		if _, n := s.chainPrefix(rec); n != tc.want {
			t.Errorf("%s: %d terms hashed on arrival, want %d", tc.name, n, tc.want)
		}
		got, err := s.contentSHA256(ctx, rec)
		if err != nil || got != tc.file.sha {
			t.Errorf("%s: SHA-256 %x (%v), want %x", tc.name, got, err, tc.file.sha)
		}
	}

	// A wrong claim is refused with the states as without them; the right one registers.
	f := r.file(seg{xa, 0, 3}, seg{xb, 0, 3}, seg{xc, 0, 2})
	bad := *f
	bad.file.SHA256 = hash.FromSHA256(sha256.Sum256([]byte("not this file")))
	var inv *InvalidError
	if _, err := s.PutShard(ctx, "ns", r.shardBytes([]*testFile{&bad}, xa, xb, xc)); !errors.As(err, &inv) {
		t.Fatalf("a wrong SHA-256 over hashed-on-arrival xorbs: %v", err)
	}
	if _, err := s.PutShard(ctx, "ns", r.shardBytes([]*testFile{f}, xa, xb, xc)); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.LookupVerifiedSHA256(ctx, "ns", hash.FromSHA256(f.sha)); err != nil || got != f.hash {
		t.Fatalf("verified mapping: %s, %v", got, err)
	}
}

// Several uploads in flight: a file's xorbs arrive before those they follow are whole. Each one
// waits for its predecessor's state and is then hashed onto it in the background, so the run still
// covers the file's first terms by the time it registers (here: arriving in reverse order).
func TestSHA256RunCatchesUpOutOfOrder(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	s := openStore(t)
	xa, xb, xc := r.xorb(0, 1, 2), r.xorb(3, 4, 5), r.xorb(6, 7)
	for _, p := range []struct {
		x *testXorb
		f xorb.Follows
	}{{xc, xorb.Follows{Prev: xb.hash}}, {xb, xorb.Follows{Prev: xa.hash}}, {xa, xorb.Follows{Start: true}}} {
		if _, err := s.PutXorbFollowing(ctx, p.x.hash, bytes.NewReader(p.x.body), p.f); err != nil {
			t.Fatal(err)
		}
	}
	f := r.file(seg{xa, 0, 3}, seg{xb, 0, 3}, seg{xc, 0, 2})
	rec := recordOf(f)
	if !testutil.Eventually(30*time.Second, func() bool { _, n := s.chainPrefix(rec); return n == 3 }) {
		_, n := s.chainPrefix(rec)
		t.Fatalf("%d of the file's 3 terms hashed before registration, want all (the later xorbs caught up)", n)
	}
	if got, err := s.contentSHA256(ctx, rec); err != nil || got != f.sha {
		t.Fatalf("SHA-256 %x (%v), want %x", got, err, f.sha)
	}
}

// gateBackend holds every open of a xorb while the gate is shut.
type gateBackend struct {
	blob.Backend
	shut atomic.Bool
	open chan struct{} // closed to let them through
}

func (g *gateBackend) Open(ctx context.Context, name string) (blob.Blob, error) {
	if g.shut.Load() && strings.HasPrefix(name, "xorbs/") {
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Backend.Open(ctx, name)
}

// Thousands of xorbs may wait for the SHA-256 state of the one they follow (a file's later xorbs
// arrive first). When it comes, they are hashed onto it by a few workers, not a goroutine (and a
// 1 MiB buffer) each; and Close stops and joins them.
func TestChainExtensionsBounded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	be := &gateBackend{Backend: looseBackend(t, dir), open: make(chan struct{})}
	s, err := Open(dir, Options{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	one := func(seed uint64) *xorb.Xorb {
		b := xorb.NewBuilder(xorb.PolicyNone)
		c := testutil.RandomBytes(200, seed)
		b.Add(c, hash.Chunk(c))
		return b.Finish()
	}
	first := one(1)
	for i := range 300 {
		x := one(uint64(100 + i))
		if _, err := s.PutXorbFollowing(ctx, x.Hash, bytes.NewReader(x.Body), xorb.Follows{Prev: first.Hash}); err != nil {
			t.Fatal(err)
		}
	}
	be.shut.Store(true)
	before := runtime.NumGoroutine()
	if _, err := s.PutXorbFollowing(ctx, first.Hash, bytes.NewReader(first.Body), xorb.Follows{Start: true}); err != nil {
		t.Fatal(err)
	}
	if n := runtime.NumGoroutine() - before; n > 16 {
		t.Errorf("%d goroutines started for 300 waiting xorbs", n)
	}
	close(be.open)
	s.Close()
}

// contentSHA256 reads a registered file's content from its xorbs, term by term, and hashes it
// (from the state its first terms left when they were hashed on arrival, see chainPrefix).
// Memory is one record at a time.
func (s *Store) contentSHA256(ctx context.Context, rec *fileRecord) ([32]byte, error) {
	h, done := s.chainPrefix(rec)
	return s.hashRest(ctx, h, rec.Terms[done:])
}
