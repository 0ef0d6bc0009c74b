package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A consistent store checks clean; each kind of damage is reported against the entry it breaks.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	xa := r.xorb(0, 1, 2, 3, 4)
	xb := r.xorb(5, 6, 7, 8, 9)
	dir := t.TempDir()
	s, err := Open(dir, Options{Backend: looseBackend(t, dir)}) // damaged below file by file
	if err != nil {
		t.Fatal(err)
	}
	mustPutXorb(t, s, xa)
	mustPutXorb(t, s, xb)
	fa, fb := r.file(seg{xa, 0, 3}), r.file(seg{xb, 0, 5})
	if _, err := s.PutShard(ctx, "org/repo", r.shardBytes([]*testFile{fa, fb}, xa, xb)); err != nil {
		t.Fatal(err)
	}
	rep, err := NewMaint(s).Check(ctx)
	if err != nil || len(rep.Problems) != 0 || rep.Xorbs != 2 || rep.Files != 2 || rep.Mappings != 2 {
		t.Fatalf("clean store: %+v, %v", rep, err)
	}

	// Damage: xorb b disappears, a stray file appears, a mapping is garbled.
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(xorbName(xb.hash)))); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "files", "stray.partial"), []byte("x"), 0o644)
	var mappings []string
	names, _ := s.be.List(ctx, "ns/")
	for _, n := range names {
		if strings.Contains(n, "/sha256v/") {
			mappings = append(mappings, n)
		}
	}
	os.WriteFile(filepath.Join(dir, filepath.FromSlash(mappings[0])), []byte("garbage"), 0o644)

	rep, err = NewMaint(s).Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.Entry+": "+p.What)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		fileName(fb.hash) + ": term 0 names xorb " + xb.hash.String() + ", which is missing",
		"files/stray.partial: not an entry",
		mappings[0] + ": store: corrupt entry",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem %q in:\n%s", want, all)
		}
	}
}
