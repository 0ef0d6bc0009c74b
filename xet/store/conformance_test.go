package store

import (
	"bytes"
	"context"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/s3test"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	blobfs "github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/fs"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/s3"
)

// The store's guarantees on every backend: the filesystem with packs, the filesystem with a file
// per blob, and S3 on a real server (versitygw). The backends' own conformance suite,
// blob/blobtest, runs in their packages.
func TestStoreOnEveryBackend(t *testing.T) {
	backends := map[string]func(t *testing.T) blob.Backend{
		"fs-packs": func(t *testing.T) blob.Backend {
			b, err := blobfs.New(t.TempDir(), blobfs.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		"fs-loose": func(t *testing.T) blob.Backend { return looseBackend(t, t.TempDir()) },
		"s3": func(t *testing.T) blob.Backend {
			srv := s3test.Start(t)
			b, err := s3.New(context.Background(), s3.Config{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey},
				srv.Bucket, "team/")
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			t.Run("store", func(t *testing.T) { conformStore(t, open(t)) })
			t.Run("gc", func(t *testing.T) { conformGC(t, open(t)) })
		})
	}
}

// conformStore: the store's own guarantees on the backend: a xorb and a shard stored, the file
// reconstructed, fsck clean, a damaged upload refused.
func conformStore(t *testing.T, be blob.Backend) {
	ctx := context.Background()
	s, err := Open("", Options{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	r := loadRef(t)
	x := r.xorb(0, 1, 2, 3)
	f := r.file(seg{x, 0, 4})
	mustPutXorb(t, s, x)
	if _, err := s.PutShard(ctx, "", r.shardBytes([]*testFile{f}, x)); err != nil {
		t.Fatal(err)
	}
	if got, err := readFile(ctx, s, f.hash, nil); err != nil || !bytes.Equal(got, f.content) {
		t.Fatalf("the file reconstructs to other bytes: %v", err)
	}
	rep, err := NewMaint(s).Check(ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check: %v %v", err, rep)
	}
	if err := NewMaint(s).VerifyXorb(ctx, x.hash); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), r.xorb(4, 5).body...)
	bad[20] ^= 1
	if _, err := s.PutXorb(ctx, r.xorb(4, 5).hash, bytes.NewReader(bad)); err == nil {
		t.Fatal("a damaged xorb was accepted")
	}
}
