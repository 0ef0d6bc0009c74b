package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLongSectionsSkipThePageCache: on Linux, a long section of a file blob is read with O_DIRECT
// where the filesystem allows it (tmpfs does not: then the test says so and passes on the fallback).
func TestLongSectionsSkipThePageCache(t *testing.T) {
	p := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(p, make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0); err != nil {
		t.Skipf("the temp dir's filesystem refuses O_DIRECT: %v", err)
	} else {
		f.Close()
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rc, err := fsBlob{File: f, size: 2 << 20}.Section(1, minDirectRead)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, ok := rc.(*directSection); !ok {
		t.Fatalf("a section of %d bytes is read through %T, not with O_DIRECT", minDirectRead, rc)
	}
	if rc, _ := (fsBlob{File: f, size: 2 << 20}).Section(0, minDirectRead-1); rc != nil {
		defer rc.Close()
		if _, ok := rc.(*directSection); ok {
			t.Fatal("a short section is read with O_DIRECT")
		}
	}
}
