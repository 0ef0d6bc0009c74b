package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// A shard claiming a SHA-256 its file's content does not hash to is refused, naming the claimed one
// and never the content's (the client did not send that), and the oid stays unmapped; the same content with its true SHA-256 registers a verified mapping. The
// trusted path (an in-process session that computed the SHA-256) is not re-hashed.
func TestPutShardVerifiesSHA256(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	xa := r.xorb(0, 1, 2, 3, 4)
	s := openStore(t)
	mustPutXorb(t, s, xa)
	f := r.file(seg{xa, 0, 3})
	wrong := sha256.Sum256([]byte("not this file"))
	bad := *f
	bad.file.SHA256 = hash.FromSHA256(wrong)
	_, err := s.PutShard(ctx, "ns", r.shardBytes([]*testFile{&bad}, xa))
	var inv *InvalidError
	if !errors.As(err, &inv) || strings.Contains(err.Error(), fmt.Sprintf("%x", f.sha)) || !strings.Contains(err.Error(), fmt.Sprintf("%x", wrong)) {
		t.Fatalf("shard with a wrong SHA-256: %v; want an InvalidError naming the claimed SHA-256 only", err)
	}
	if _, _, err := s.LookupSHA256(ctx, "ns", hash.FromSHA256(wrong)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the wrong oid is mapped: %v", err)
	}
	if _, err := s.PutShard(ctx, "ns", r.shardBytes([]*testFile{f}, xa)); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.LookupVerifiedSHA256(ctx, "ns", hash.FromSHA256(f.sha)); err != nil || got != f.hash {
		t.Fatalf("verified mapping: %s, %v", got, err)
	}
}

// An unverified mapping (written by a store before verification, possibly wrong) is served by
// LookupSHA256 but never by LookupVerifiedSHA256, and a correct registration of the oid supersedes
// it: the oid then leads to the right file.
func TestCorrectUploadRepairsUnverifiedMapping(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	xa := r.xorb(0, 1, 2, 3, 4)
	s := openStore(t)
	mustPutXorb(t, s, xa)
	right, other := r.file(seg{xa, 0, 3}), r.file(seg{xa, 3, 5})
	if _, err := s.PutShard(ctx, "ns", r.shardBytes([]*testFile{other}, xa)); err != nil {
		t.Fatal(err)
	}
	oid := hash.FromSHA256(right.sha)
	if _, err := s.be.Create(ctx, sha256Name("ns", oid), bytes.NewReader(marshalSHA(other.hash, uint64(len(other.content))))); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.LookupSHA256(ctx, "ns", oid); err != nil || got != other.hash {
		t.Fatalf("poisoned lookup: %s, %v", got, err)
	}
	if _, _, err := s.LookupVerifiedSHA256(ctx, "ns", oid); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unverified mapping counts as verified: %v", err)
	}
	if _, err := s.PutShardTrusted(ctx, "ns", r.shardBytes([]*testFile{right}, xa)); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.LookupSHA256(ctx, "ns", oid); err != nil || got != right.hash {
		t.Fatalf("after the correct upload: %s, %v; want %s", got, err, right.hash)
	}
}
