//go:build unix

package fs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test when it has not returned in 10 s: the open of a fifo waits for
// a writer, forever when none comes.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10 s: it blocks on a fifo", what)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // release an open a failed test left waiting
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
}

// A store's directory on a filesystem others write may hold a fifo where a pack, its index, its
// sorted index or a loose blob belongs: each is refused as not a regular file, never opened to wait
// for a writer while the pack set's lock is held (every lookup of the store would wait behind it).
// A sorted index is then read from its .idx; a pack or a blob is an error that names it. Before, a
// fifo .sidx, .pack or .idx made every read of the store hang, and a fifo loose blob its Open.
func TestSpecialFilesAreNotOpened(t *testing.T) {
	dir, b, pack := onePack(t, 20)
	b.Close()
	id := strings.TrimSuffix(filepath.Base(pack), packExt)
	mkfifo(t, filepath.Join(dir, packDir, id+sortedExt))
	within(t, "reading the packed blobs", func() { mustRead(t, dir, 0, 20) })

	const other = "0123456789abcdef01234567"
	mkfifo(t, filepath.Join(dir, packDir, other+packExt))
	mkfifo(t, filepath.Join(dir, packDir, other+idxExt))
	within(t, "reading beside a fifo pack", func() {
		rb := newTestBackend(t, dir)
		if bl, err := rb.Open(context.Background(), blobName(3)); err == nil {
			bl.Close()
			t.Errorf("a read beside a fifo pack succeeded; want the fifo named (the store's packs are all listed at once)")
		} else if !strings.Contains(err.Error(), other+packExt+" is not a regular file") {
			t.Errorf("reading beside a fifo pack: %v; want the fifo named as not a regular file", err)
		}
	})

	loose := t.TempDir()
	lb, err := New(loose, Options{Loose: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	ctx := context.Background()
	if _, err := lb.Create(ctx, blobName(1), bytes.NewReader(blobData(1))); err != nil {
		t.Fatal(err)
	}
	p, err := lb.path(blobName(1))
	if err != nil {
		t.Fatal(err)
	}
	mkfifo(t, p)
	within(t, "opening a loose blob", func() {
		if bl, err := lb.Open(ctx, blobName(1)); err == nil {
			bl.Close()
			t.Errorf("a fifo opened as blob %s", blobName(1))
		} else if !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("opening a fifo as a blob: %v; want it named as not a regular file", err)
		}
	})
}
