// Package blobtest is the conformance suite of blob.Backend implementations (test support: only
// tests import it).
package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// Run runs the conformance suite on backends open returns, a fresh empty one per call: blobs
// created once and read by ranges, bad names refused, quarantine, writers racing on one name, and
// what gc asks (listing with sizes and times, moving, deleting).
func Run(t *testing.T, open func(t *testing.T) blob.Backend) {
	t.Run("blobs", func(t *testing.T) { blobs(t, open(t)) })
	t.Run("concurrent", func(t *testing.T) { concurrent(t, open(t)) })
	t.Run("sweep", func(t *testing.T) { sweep(t, open(t)) })
}

// roundTrip creates name with data, once (a second Create keeps the first bytes), and reads it
// back whole and by a range that runs past its end.
func roundTrip(t *testing.T, be blob.Backend, name string, data []byte) {
	ctx := context.Background()
	created, err := be.Create(ctx, name, bytes.NewReader(data))
	if err != nil || !created {
		t.Fatalf("Create %s: %v, %v", name, created, err)
	}
	if created, err := be.Create(ctx, name, bytes.NewReader([]byte("other"))); err != nil || created {
		t.Fatalf("second Create of %s: created=%v, %v", name, created, err)
	}
	b, err := be.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Size() != int64(len(data)) {
		t.Fatalf("%s: size %d, want %d", name, b.Size(), len(data))
	}
	got := make([]byte, len(data))
	if _, err := b.ReadAt(ctx, got, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	part := make([]byte, 100)
	n, err := b.ReadAt(ctx, part, int64(len(data)-60))
	if !bytes.Equal(got, data) || n != 60 || err != io.EOF || !bytes.Equal(part[:60], data[len(data)-60:]) {
		t.Fatalf("%s: reads give other bytes (ranged read: %d, %v)", name, n, err)
	}
	if ok, err := be.Exists(ctx, name); err != nil || !ok {
		t.Fatalf("Exists %s: %v, %v", name, ok, err)
	}
}

// failedWrites: a write that fails half-way leaves nothing under its name (sized and unsized
// readers).
func failedWrites(t *testing.T, be blob.Backend, big []byte) {
	ctx := context.Background()
	for i, r := range []io.Reader{&failingReader{data: big, n: 1 << 20}, sizedFailing{&failingReader{data: big, n: 2 << 20}, int64(len(big))}} {
		name := fmt.Sprintf("xorbs/cd/partial%d", i)
		if _, err := be.Create(ctx, name, r); err == nil {
			t.Fatalf("Create %s from a failing reader succeeded", name)
		}
		if ok, _ := be.Exists(ctx, name); ok {
			t.Fatalf("%s is visible after a failed write", name)
		}
	}
}

// blobs: create-if-absent, whole and ranged reads, exists, sorted listing, bad names, quarantine.
func blobs(t *testing.T, be blob.Backend) {
	ctx := context.Background()
	small, big := testutil.RandomBytes(3000, 1), testutil.RandomBytes(3<<20, 2)
	roundTrip(t, be, "files/ab/small", small)
	roundTrip(t, be, "xorbs/cd/big", big)
	failedWrites(t, be, big)
	if ok, err := be.Exists(ctx, "files/ab/none"); err != nil || ok {
		t.Fatalf("Exists of a missing blob: %v, %v", ok, err)
	}
	if _, err := be.Open(ctx, "files/ab/none"); !errors.Is(err, blob.ErrNotFound) {
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
	if err := be.Quarantine(ctx, "xorbs/cd/big"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("quarantine of a missing blob: %v", err)
	}
}

// concurrent: writers racing on one name all succeed and the blob holds one whole copy.
func concurrent(t *testing.T, be blob.Backend) {
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
	if _, err := b.ReadAt(ctx, got, 0); (err != nil && err != io.EOF) || !bytes.Equal(got, data) {
		t.Fatalf("raced blob: %d bytes, %v", len(got), err)
	}
}

// sweep: what gc asks of a backend: listing with sizes and times, moving, deleting.
func sweep(t *testing.T, be blob.Backend) {
	ctx := context.Background()
	sw := be
	big := bytes.Repeat([]byte("x"), 2<<20) // a file of its own on blob/fs, not packed
	small := []byte("small")
	before := time.Now().Add(-time.Minute)
	for name, data := range map[string][]byte{"xorbs/aa/big": big, "xorbs/bb/small": small} {
		if _, err := be.Create(ctx, name, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := sw.ListInfo(ctx, "xorbs/")
	if err != nil || len(infos) != 2 {
		t.Fatalf("ListInfo: %v %v", infos, err)
	}
	packed := false
	for _, in := range infos {
		want := map[string]int64{"xorbs/aa/big": int64(len(big)), "xorbs/bb/small": int64(len(small))}[in.Name]
		if in.Size != want || in.ModTime.Before(before) || in.ModTime.After(time.Now().Add(time.Minute)) {
			t.Errorf("ListInfo entry %+v: want size %d and a time of now", in, want)
		}
		packed = packed || in.Packed
	}
	if err := sw.Move(ctx, "xorbs/aa/big", "trash/xorbs/aa/big"); err != nil {
		t.Fatal(err)
	}
	if names, _ := be.List(ctx, "xorbs/"); len(names) != 1 {
		t.Fatalf("after the move, xorbs/ lists %v", names)
	}
	if ok, _ := be.Exists(ctx, "trash/xorbs/aa/big"); !ok {
		t.Fatal("the moved blob is not at its new name")
	}
	if err := sw.Move(ctx, "xorbs/aa/big", "trash/xorbs/aa/big"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("moving a missing blob: %v, want ErrNotFound", err)
	}
	if err := sw.Delete(ctx, "trash/xorbs/aa/big"); err != nil {
		t.Fatal(err)
	}
	if err := sw.Delete(ctx, "trash/xorbs/aa/big"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("deleting a missing blob: %v, want ErrNotFound", err)
	}
	err = sw.Delete(ctx, "xorbs/bb/small")
	switch {
	case packed && !errors.Is(err, blob.ErrPacked):
		t.Fatalf("deleting a packed blob: %v, want ErrPacked", err)
	case !packed && err != nil:
		t.Fatal(err)
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
