package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// A xorb whose stored copy is damaged is replaced by the next valid upload of it (which reports
// inserted); a sound copy is kept (not inserted), and an invalid body is refused either way.
func TestDamagedXorbReplacedByUpload(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	x := r.xorb(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	dir := t.TempDir()
	s, err := Open(dir, Options{Backend: looseBackend(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	mustPutXorb(t, s, x)
	if ins, err := s.PutXorb(ctx, x.hash, bytes.NewReader(x.body)); err != nil || ins {
		t.Fatalf("upload of a sound stored xorb: inserted=%v, %v", ins, err)
	}
	p := filepath.Join(dir, filepath.FromSlash(xorbName(x.hash)))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[100] ^= 1 // chunk data: the footer still parses
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := NewMaint(s).VerifyXorb(ctx, x.hash); err == nil {
		t.Fatal("VerifyXorb passed a damaged xorb")
	}
	bad := append([]byte(nil), x.body...)
	bad[50] ^= 1
	if _, err := s.PutXorb(ctx, x.hash, bytes.NewReader(bad)); err == nil {
		t.Fatal("an invalid body was accepted for a damaged xorb")
	}
	if ins, err := s.PutXorb(ctx, x.hash, bytes.NewReader(x.body)); err != nil || !ins {
		t.Fatalf("upload over a damaged copy: inserted=%v, %v", ins, err)
	}
	if err := NewMaint(s).VerifyXorb(ctx, x.hash); err != nil {
		t.Fatalf("after the replacement: %v", err)
	}
	if q, _ := os.ReadDir(filepath.Join(dir, "quarantine")); len(q) != 1 {
		t.Fatalf("%d files in quarantine/, want the damaged copy", len(q))
	}
}

// flakyBackend fails the next read of a blob once when failNext is set.
type flakyBackend struct {
	blob.Backend
	failNext    atomic.Bool
	quarantined atomic.Int32
}

func (b *flakyBackend) Open(ctx context.Context, name string) (blob.Blob, error) {
	bl, err := b.Backend.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return &flakyBlob{Blob: bl, be: b}, nil
}

func (b *flakyBackend) Quarantine(ctx context.Context, name string) error {
	b.quarantined.Add(1)
	return b.Backend.Quarantine(ctx, name)
}

type flakyBlob struct {
	blob.Blob
	be *flakyBackend
}

func (f *flakyBlob) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if f.be.failNext.CompareAndSwap(true, false) {
		return 0, errors.New("connection reset by peer")
	}
	return f.Blob.ReadAt(ctx, p, off)
}

// A read of a stored xorb that fails once is not damage: an upload of the xorb then keeps the
// stored copy (the next one checks it again), and fsck --verify-data --repair reports it unread
// without moving it aside.
func TestTransientReadIsNotDamage(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	x := r.xorb(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	dir := t.TempDir()
	be := &flakyBackend{Backend: looseBackend(t, dir)}
	s, err := Open(dir, Options{Backend: be, MetaCacheBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	mustPutXorb(t, s, x)
	be.failNext.Store(true)
	if ins, err := s.PutXorb(ctx, x.hash, bytes.NewReader(x.body)); err != nil || ins {
		t.Fatalf("upload of a stored xorb while a read fails: inserted=%v, %v", ins, err)
	}
	be.failNext.Store(true)
	report, _, err := NewMaint(s).Fsck(ctx, dir, FsckOptions{VerifyData: true, Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := be.quarantined.Load(); n != 0 {
		t.Fatalf("a sound xorb was moved aside %d times after a failed read:\n%s", n, report)
	}
	if err := NewMaint(s).VerifyXorb(ctx, x.hash); err != nil {
		t.Fatalf("the stored xorb: %v", err)
	}
}
