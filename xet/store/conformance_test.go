package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/s3test"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// The one storage conformance suite, run against every backend: the filesystem with packs, the
// filesystem with a file per blob, and S3 on a real server (versitygw).
func TestBackendConformance(t *testing.T) {
	backends := map[string]func(t *testing.T) Backend{
		"fs-packs": func(t *testing.T) Backend {
			b, err := NewFSBackend(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		"fs-loose": func(t *testing.T) Backend { return looseBackend(t, t.TempDir()) },
		"s3": func(t *testing.T) Backend {
			srv := s3test.Start(t)
			b, err := NewS3Backend(context.Background(), S3Config{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey},
				srv.Bucket, "team/")
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			t.Run("blobs", func(t *testing.T) { conformBlobs(t, open(t)) })
			t.Run("concurrent", func(t *testing.T) { conformConcurrent(t, open(t)) })
			t.Run("store", func(t *testing.T) { conformStore(t, open(t)) })
			t.Run("sweep", func(t *testing.T) { conformSweep(t, open(t)) })
			t.Run("gc", func(t *testing.T) { conformGC(t, open(t)) })
		})
	}
}

// conformBlobs: create-if-absent, whole and ranged reads, exists, sorted listing, bad names,
// quarantine.
func conformBlobs(t *testing.T, be Backend) {
	ctx := context.Background()
	small, big := testutil.RandomBytes(3000, 1), testutil.RandomBytes(3<<20, 2)
	for _, c := range []struct {
		name string
		data []byte
	}{{"files/ab/small", small}, {"xorbs/cd/big", big}} {
		created, err := be.Create(ctx, c.name, bytes.NewReader(c.data))
		if err != nil || !created {
			t.Fatalf("Create %s: %v, %v", c.name, created, err)
		}
		if created, err := be.Create(ctx, c.name, bytes.NewReader([]byte("other"))); err != nil || created {
			t.Fatalf("second Create of %s: created=%v, %v", c.name, created, err)
		}
		b, err := be.Open(ctx, c.name)
		if err != nil {
			t.Fatal(err)
		}
		if b.Size() != int64(len(c.data)) {
			t.Fatalf("%s: size %d, want %d", c.name, b.Size(), len(c.data))
		}
		got := make([]byte, len(c.data))
		if _, err := b.ReadAt(got, 0); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		part := make([]byte, 100)
		n, err := b.ReadAt(part, int64(len(c.data)-60))
		if !bytes.Equal(got, c.data) || n != 60 || err != io.EOF || !bytes.Equal(part[:60], c.data[len(c.data)-60:]) {
			t.Fatalf("%s: reads give other bytes (ranged read: %d, %v)", c.name, n, err)
		}
		b.Close()
		if ok, err := be.Exists(ctx, c.name); err != nil || !ok {
			t.Fatalf("Exists %s: %v, %v", c.name, ok, err)
		}
	}
	// A write that fails half-way leaves nothing under its name (sized and unsized readers).
	for i, r := range []io.Reader{&failingReader{data: big, n: 1 << 20}, sizedFailing{&failingReader{data: big, n: 2 << 20}, int64(len(big))}} {
		name := fmt.Sprintf("xorbs/cd/partial%d", i)
		if _, err := be.Create(ctx, name, r); err == nil {
			t.Fatalf("Create %s from a failing reader succeeded", name)
		}
		if ok, _ := be.Exists(ctx, name); ok {
			t.Fatalf("%s is visible after a failed write", name)
		}
	}
	if ok, err := be.Exists(ctx, "files/ab/none"); err != nil || ok {
		t.Fatalf("Exists of a missing blob: %v, %v", ok, err)
	}
	if _, err := be.Open(ctx, "files/ab/none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of a missing blob: %v", err)
	}
	for _, bad := range []string{"", "/abs", "a/../b", "tmp/x", "quarantine/x", "a//b"} {
		if _, err := be.Create(ctx, bad, bytes.NewReader(nil)); err == nil {
			t.Errorf("Create %q accepted", bad)
		}
	}
	if names, err := be.List(ctx, "files/"); err != nil || fmt.Sprint(names) != "[files/ab/small]" {
		t.Fatalf("List files/: %v, %v", names, err)
	}
	if err := be.Quarantine(ctx, "xorbs/cd/big"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := be.Exists(ctx, "xorbs/cd/big"); ok {
		t.Fatal("a quarantined blob still exists")
	}
	if names, _ := be.List(ctx, "xorbs/"); len(names) != 0 {
		t.Fatalf("a quarantined blob is still listed: %v", names)
	}
	if err := be.Quarantine(ctx, "xorbs/cd/big"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("quarantine of a missing blob: %v", err)
	}
}

// conformConcurrent: writers racing on one name all succeed and the blob holds one whole copy.
func conformConcurrent(t *testing.T, be Backend) {
	ctx := context.Background()
	data := testutil.RandomBytes(2<<20, 3)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := be.Create(ctx, "xorbs/ef/raced", bytes.NewReader(data)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	b, err := be.Open(ctx, "xorbs/ef/raced")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got := make([]byte, b.Size())
	if _, err := b.ReadAt(got, 0); (err != nil && err != io.EOF) || !bytes.Equal(got, data) {
		t.Fatalf("raced blob: %d bytes, %v", len(got), err)
	}
}

// conformStore: the store's own guarantees on the backend: a xorb and a shard stored, the file
// reconstructed, fsck clean, a damaged upload refused.
func conformStore(t *testing.T, be Backend) {
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
	rep, err := s.Check(ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check: %v %v", err, rep)
	}
	if err := s.VerifyXorb(ctx, x.hash); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), r.xorb(4, 5).body...)
	bad[20] ^= 1
	if _, err := s.PutXorb(ctx, r.xorb(4, 5).hash, bytes.NewReader(bad)); err == nil {
		t.Fatal("a damaged xorb was accepted")
	}
}

// failingReader yields n bytes of data, then an error.
type failingReader struct {
	data []byte
	n    int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("source failed")
	}
	k := copy(p[:min(len(p), f.n)], f.data)
	f.data, f.n = f.data[k:], f.n-k
	return k, nil
}

// sizedFailing is a failingReader that announces its full size (the backend may reserve space).
type sizedFailing struct {
	*failingReader
	size int64
}

func (s sizedFailing) Size() int64 { return s.size }
