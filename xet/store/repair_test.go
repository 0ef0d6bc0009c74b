package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
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
	if err := s.VerifyXorb(ctx, x.hash); err == nil {
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
	if err := s.VerifyXorb(ctx, x.hash); err != nil {
		t.Fatalf("after the replacement: %v", err)
	}
	if q, _ := os.ReadDir(filepath.Join(dir, "quarantine")); len(q) != 1 {
		t.Fatalf("%d files in quarantine/, want the damaged copy", len(q))
	}
}
