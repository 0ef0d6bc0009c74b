package fs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/iotest"
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
	rc, err := fsBlob{f: f, size: 2 << 20}.Section(context.Background(), 1, minDirectRead)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, ok := rc.(*directSection); !ok {
		t.Fatalf("a section of %d bytes is read through %T, not with O_DIRECT", minDirectRead, rc)
	}
	if rc, _ := (fsBlob{f: f, size: 2 << 20}).Section(context.Background(), 0, minDirectRead-1); rc != nil {
		defer rc.Close()
		if _, ok := rc.(*directSection); ok {
			t.Fatal("a short section is read with O_DIRECT")
		}
	}
}

// A blob streamed into a file (a reader without a size) arrives whole at every length around the
// O_DIRECT block and alignment sizes, whether the filesystem takes O_DIRECT or not.
func TestCopyDirect(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, directAlign - 1, directReadBuf, directReadBuf + 1, directReadBuf + minDirect + 5, 3*directReadBuf - directAlign} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i*7 + i>>12)
		}
		f, err := os.CreateTemp(dir, "blob-*")
		if err != nil {
			t.Fatal(err)
		}
		got, err := copyDirect(f, iotest.HalfReader(bytes.NewReader(want)))
		if err != nil || got != int64(n) {
			t.Fatalf("copyDirect of %d bytes = %d, %v", n, got, err)
		}
		f.Close()
		back, err := os.ReadFile(f.Name())
		if err != nil || !bytes.Equal(back, want) {
			t.Fatalf("%d bytes streamed, read back %d differing (%v)", n, len(back), err)
		}
	}
	if f, err := os.OpenFile(filepath.Join(dir, "probe"), os.O_CREATE|os.O_WRONLY|syscall.O_DIRECT, 0o644); err != nil {
		t.Logf("the temp dir's filesystem refuses O_DIRECT (%v): the fallback was tested", err)
	} else {
		f.Close()
	}
	// A reader that fails is the caller's error, not a short blob.
	f, err := os.CreateTemp(dir, "blob-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := copyDirect(f, io.MultiReader(bytes.NewReader(make([]byte, directReadBuf+10)), iotest.ErrReader(errors.New("reset")))); err == nil {
		t.Fatal("a failing reader was copied without an error")
	}
}
