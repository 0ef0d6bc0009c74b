//go:build unix

package chunkcache

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// TestSpecialFilesAreNotRead: a fifo where the cache expects a segment's index or its bytes is not
// read (it would wait for a writer forever); the cache opens, misses, and works. Before the fix,
// Open blocked on the fifo index while holding the cache's lock ("Open did not return within 5s").
func TestSpecialFilesAreNotRead(t *testing.T) {
	dir := t.TempDir()
	b, h := chunk(0)
	// Segment 1's bytes are a fifo (its index is a regular file naming entry h); segment 2's index is.
	idx := writeSegment(t, dir, "0000000000000001-1-00000000", b, nil)
	seg := idx[:len(idx)-len(".idx")] + ".seg"
	fifos := []string{seg, filepath.Join(dir, "segments", "0000000000000002-1-00000000.idx")}
	if err := os.Remove(seg); err != nil {
		t.Fatal(err)
	}
	for _, p := range fifos {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var c *Cache
	done := make(chan error, 1)
	go func() {
		var err error
		if c, err = Open(dir, Options{Limit: MinLimit}); err == nil {
			_, err = c.Get(Chunk, h)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrMiss) {
			t.Fatalf("Open, then Get of the entry in a fifo: %v, want ErrMiss", err)
		}
	case <-time.After(5 * time.Second):
		testutil.UnblockFifos(fifos, done)
		t.Fatal("Open and Get did not return within 5s: they block on a fifo")
	}
	defer c.Close()
	b2, h2 := chunk(2)
	if err := c.Put(Chunk, h2, b2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(Chunk, h2); err != nil {
		t.Fatalf("Get after Put: %v", err)
	}
}
