package fs

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

var errBoom = errors.New("boom")

func TestFSBackend(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	b, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	created, err := b.Create(ctx, "a/b/one", strings.NewReader("first"))
	if err != nil || !created {
		t.Fatalf("Create = %v, %v", created, err)
	}
	created, err = b.Create(ctx, "a/b/one", strings.NewReader("second"))
	if err != nil || created {
		t.Fatalf("second Create = %v, %v; want false", created, err)
	}
	bl, err := b.Open(ctx, "a/b/one")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(io.NewSectionReader(blob.ReaderAt(ctx, bl), 0, bl.Size()))
	bl.Close()
	if string(got) != "first" {
		t.Fatalf("blob holds %q, want the first writer's", got)
	}
	if _, err := b.Open(ctx, "a/b/two"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Open missing: %v", err)
	}
	if ok, err := b.Exists(ctx, "a/b/two"); ok || err != nil {
		t.Fatalf("Exists missing = %v, %v", ok, err)
	}
	if _, err := b.Create(ctx, "a/c", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	names, err := b.List(ctx, "a/")
	if err != nil || !reflect.DeepEqual(names, []string{"a/b/one", "a/c"}) {
		t.Fatalf("List = %v, %v", names, err)
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", "tmp/x", `a\b`} {
		if _, err := b.Create(ctx, bad, strings.NewReader("x")); err == nil {
			t.Errorf("Create(%q) accepted", bad)
		}
	}
	// A failing reader leaves nothing behind.
	if _, err := b.Create(ctx, "a/fail", io.MultiReader(strings.NewReader("part"), iotest.ErrReader(errBoom))); !errors.Is(err, errBoom) {
		t.Fatalf("Create with a failing reader: %v", err)
	}
	if ok, _ := b.Exists(ctx, "a/fail"); ok {
		t.Fatal("a failed Create is visible")
	}
	if tmp, _ := os.ReadDir(filepath.Join(root, "tmp")); len(tmp) != 0 {
		t.Fatalf("%d temporary files left", len(tmp))
	}
	// Leftovers of killed writers are cleaned once old; young ones may belong to live writers.
	old, young := filepath.Join(root, "tmp", "blob-old"), filepath.Join(root, "tmp", "blob-young")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := b.CleanTemp(ctx, time.Hour); err != nil || n != 1 {
		t.Fatalf("CleanTemp = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatalf("young temp file removed: %v", err)
	}
}
