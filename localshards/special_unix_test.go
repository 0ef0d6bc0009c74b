//go:build unix

package localshards

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// TestSpecialFilesAreNotRead: a fifo, a directory or a symlink to a fifo where the cache expects a
// shard, a singles file or its snapshot is set aside or ignored; the cache loads and answers.
// Before the fix, Load opened the fifo for reading and blocked forever, holding the writers' lock
// ("Load did not return within 5s: it blocks on a fifo").
func TestSpecialFilesAreNotRead(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir, Options{Now: func() time.Time { return t0 }, RefreshInterval: -1})
	good := testShard(70, 1, 8)
	if err := c.AddOwn(good); err != nil {
		t.Fatal(err)
	}
	sd := c.Dir()
	var fifos []string
	mkfifo := func(name string) {
		p := filepath.Join(sd, name)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		fifos = append(fifos, p)
	}
	mkfifo(strings.Repeat("1", 64) + shardExt)
	mkfifo(strings.Repeat("2", 64) + singlesExt)
	mkfifo(snapshotName)
	if err := os.Mkdir(filepath.Join(sd, strings.Repeat("3", 64)+shardExt), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifos[0], filepath.Join(sd, strings.Repeat("4", 64)+shardExt)); err != nil {
		t.Fatal(err)
	}

	c2, err := Open(dir, Options{Now: func() time.Time { return t0 }, RefreshInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c2.Load() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
	case <-time.After(5 * time.Second):
		testutil.UnblockFifos(fifos, done)
		c2.Close()
		t.Fatal("Load did not return within 5s: it blocks on a fifo")
	}
	defer c2.Close()
	mustFind(t, c2, good.Xorbs[0].Chunks[3].Hash, good.Xorbs[0].Hash, 3)
}
