package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

func putXorbAs(t *testing.T, s *Store, a Access, x *testXorb) {
	t.Helper()
	if _, err := s.PutXorbAs(context.Background(), a, x.hash, bytes.NewReader(x.body), xorb.Follows{}); err != nil {
		t.Fatalf("PutXorbAs %s: %v", x.hash, err)
	}
}

// A repository's shard may name chunks of a xorb only when the repository uploaded it, was shown
// it by a keyed dedupe answer, or its user uploaded it; knowing every chunk hash is not enough. A
// file is read only in the repositories it is registered in.
func TestAccessRule(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	s := openStore(t)
	x := r.xorb(0, 1, 2, 3)
	alice, bob := Access{Repo: "org/a", User: "alice"}, Access{Repo: "org/b", User: "bob"}
	putXorbAs(t, s, alice, x)
	f := r.file(seg{x, 0, 4})
	if _, err := s.PutShardAs(ctx, alice, r.shardBytes([]*testFile{f}, x)); err != nil {
		t.Fatal(err)
	}
	var inv *InvalidError
	body := r.shardBytes([]*testFile{f})
	if _, err := s.PutShardAs(ctx, bob, body); !errors.As(err, &inv) || !strings.Contains(err.Error(), "not uploaded to this repository") {
		t.Fatalf("org/b naming org/a's xorb: %v", err)
	}
	if _, err := s.ReconstructIn(ctx, "org/b", f.hash, nil, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("org/b reconstructing org/a's file: %v", err)
	}
	if _, err := s.FileSizeIn(ctx, "org/b", f.hash); !errors.Is(err, ErrNotFound) {
		t.Fatalf("org/b reading the size of org/a's file: %v", err)
	}
	if _, err := s.ReconstructIn(ctx, "org/a", f.hash, nil, 0); err != nil {
		t.Fatalf("org/a reconstructing its file: %v", err)
	}
	// Shown by a keyed answer: may name it.
	if _, err := s.GlobalDedupeAs(ctx, bob, r.hashes[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutShardAs(ctx, bob, body); err != nil {
		t.Fatalf("org/b after the keyed answer: %v", err)
	}
	if ok, _ := s.UploadedBy(ctx, "org/b", x.hash); ok {
		t.Error("org/b counts as the uploader of a xorb it was only shown")
	}
	// Alice's other repository: her own upload counts.
	if _, err := s.PutShardAs(ctx, Access{Repo: "org/c", User: "alice"}, body); err != nil {
		t.Fatalf("alice's second repository: %v", err)
	}
	// Uploading the bytes earns the right; a body that is not the xorb earns nothing.
	carol := Access{Repo: "org/d", User: "carol"}
	if _, err := s.PutXorbAs(ctx, carol, x.hash, bytes.NewReader(x.body[:len(x.body)-1]), xorb.Follows{}); err == nil {
		t.Fatal("a truncated body of a stored xorb was accepted")
	}
	if _, err := s.PutShardAs(ctx, carol, body); !errors.As(err, &inv) {
		t.Fatalf("org/d after a bad upload: %v", err)
	}
	putXorbAs(t, s, carol, x)
	if _, err := s.PutShardAs(ctx, carol, body); err != nil {
		t.Fatalf("org/d after uploading the xorb: %v", err)
	}
	if ok, _ := s.UploadedBy(ctx, "org/d", x.hash); !ok {
		t.Error("org/d uploaded the xorb")
	}
}

// No refusal names a hash or a size the client did not send: a mismatch against a stored xorb
// says what differs, not what the store holds.
func TestRefusalsNameOnlyWhatWasSent(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	s := openStore(t)
	x := r.xorb(0, 1, 2, 3)
	a := Access{Repo: "org/a"}
	putXorbAs(t, s, a, x)
	f := r.file(seg{x, 0, 4})
	secret := func(err error) bool {
		msg := err.Error()
		for _, h := range r.hashes[:4] {
			if strings.Contains(msg, h.String()) {
				return true
			}
		}
		return strings.Contains(msg, "4 chunks") || strings.Contains(msg, "hold ")
	}
	bounds := f.file
	bounds.Terms = append([]shard.Term(nil), bounds.Terms...)
	bounds.Terms[0].ChunkEnd = 9
	size := f.file
	size.Terms = append([]shard.Term(nil), size.Terms...)
	size.Terms[0].UnpackedBytes++
	sx := r.shardXorb(x)
	sx.Chunks = sx.Chunks[:3]
	for name, body := range map[string][]byte{
		"out of bounds":    rawShard([]shard.File{bounds}, nil),
		"unpacked bytes":   rawShard([]shard.File{size}, nil),
		"xorb chunk count": rawShard(nil, []shard.Xorb{sx}),
	} {
		_, err := s.PutShardAs(ctx, a, body)
		if err == nil || secret(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A file registered in a store of format 2 (before access records) still counts for its
// repository after the upgrade: it is read there, and the repository may name its xorbs again.
func TestUpgradeKeepsRegistrations(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	dir := t.TempDir()
	s, err := Open(dir, Options{Backend: looseBackend(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	x := r.xorb(0, 1, 2, 3)
	mustPutXorb(t, s, x)
	f := r.file(seg{x, 0, 4})
	if _, err := s.PutShard(ctx, "org/a", r.shardBytes([]*testFile{f}, x)); err != nil {
		t.Fatal(err)
	}
	// Make it a format-2 store: no access records, format blob 2.
	names, _ := s.be.List(ctx, "ns/")
	for _, n := range names {
		if !strings.Contains(n, "/sha256v/") {
			s.be.Delete(ctx, n)
		}
	}
	names, _ = s.be.List(ctx, "verified/")
	for _, n := range names {
		s.be.Delete(ctx, n)
	}
	if err := NewMaint(s).setFormat(ctx, FormatVersion, 2); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(dir, Options{Backend: looseBackend(t, dir)}); err != nil || s.Format() != FormatVersion {
		t.Fatalf("upgraded: format %d, %v", s.Format(), err)
	}
	if _, err := s.ReconstructIn(ctx, "org/a", f.hash, nil, 0); err != nil {
		t.Fatalf("org/a's file after the upgrade: %v", err)
	}
	if _, err := s.ReconstructIn(ctx, "org/b", f.hash, nil, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("org/b reads org/a's file after the upgrade: %v", err)
	}
	g := r.file(seg{x, 1, 3})
	if _, err := s.PutShardAs(ctx, Access{Repo: "org/a"}, r.shardBytes([]*testFile{g})); err != nil {
		t.Fatalf("org/a naming its xorb after the upgrade: %v", err)
	}
	if _, err := s.PutShardAs(ctx, Access{Repo: "org/b"}, r.shardBytes([]*testFile{g})); err == nil {
		t.Fatal("org/b names org/a's xorb after the upgrade")
	}
	if _, err := s.verifiedSHA256(ctx, f.hash); err != nil {
		t.Fatalf("verified marker of a verified mapping: %v", err)
	}
}

// A xorb whose SHA-256 check would pass the registration's budget is registered unverified: the
// oid maps to the file, but never as "already stored"; the repository's uploads pay for the
// checks of its next registration; a file verified once is not hashed again.
func TestRegistrationBudget(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	// A xorb of 64 chunks of 128 KiB of zeros: 8 MiB raw in a small body.
	x := testutil.ZerosXorb(64)
	zero := make([]byte, xorb.MaxChunkRaw)
	a := Access{Repo: "org/a"}
	if _, err := s.PutXorbAs(ctx, a, x.Hash, bytes.NewReader(x.Body), xorb.Follows{}); err != nil {
		t.Fatal(err)
	}
	// One file naming the xorb's 64 chunks 8 times over: 64 MiB to hash.
	big := zeroFile(t, x, 8)
	s.credits.take("org/a", s.now()) // spend what the upload brought
	_, cost, err := s.putShard(ctx, a, big.body, modeClient, nil)
	if err != nil || cost.hashed > FreeHashBytes || cost.unverified != 1 {
		t.Fatalf("over budget: %+v, %v", cost, err)
	}
	if _, _, err := s.LookupVerifiedSHA256(ctx, "org/a", big.sha); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unverified registration was mapped as verified: %v", err)
	}
	if f, _, err := s.LookupSHA256(ctx, "org/a", big.sha); err != nil || f != big.file {
		t.Fatalf("unverified mapping: %s, %v", f, err)
	}
	// The same file after an upload of as many bytes as it names: verified.
	s.credits.add("org/a", 64<<20, s.now())
	if _, cost, err = s.putShard(ctx, a, big.body, modeClient, nil); err != nil || cost.hashed != 64<<20 || cost.unverified != 0 {
		t.Fatalf("within budget: %+v, %v", cost, err)
	}
	// In another repository the verified marker spares the hashing.
	if _, cost, err = s.putShard(ctx, Access{Repo: "org/b", User: "x"}, big.body, modeClient, nil); err == nil {
		t.Fatal("org/b names org/a's xorb")
	}
	s.GlobalDedupeAs(ctx, Access{Repo: "org/b"}, hash.Chunk(zero))
	if _, cost, err = s.putShard(ctx, Access{Repo: "org/b"}, big.body, modeClient, nil); err != nil || cost.hashed != 0 || cost.unverified != 0 {
		t.Fatalf("a verified file in a second repository: %+v, %v", cost, err)
	}
	if f, _, err := s.LookupVerifiedSHA256(ctx, "org/b", big.sha); err != nil || f != big.file {
		t.Fatalf("org/b's mapping: %v", err)
	}
}

type zeroShard struct {
	body []byte
	file hash.Hash
	sha  hash.Hash
}

// zeroFile is a shard of one file naming all chunks of x (zeros) times times, with its SHA-256.
func zeroFile(t testing.TB, x *xorb.Xorb, times int) zeroShard {
	t.Helper()
	sum := sha256.Sum256(make([]byte, int(x.RawBytes)*times))
	f := testutil.RepeatingFile(x, times, sum)
	return zeroShard{body: rawShard([]shard.File{f}, nil), file: f.Hash, sha: hash.FromSHA256(sum)}
}
