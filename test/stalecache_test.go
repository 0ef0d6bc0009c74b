package test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// A shard cache that promises xorbs the remote no longer has (the remote was recreated) does not
// block pushes: the push that meets it forgets those cache entries and uploads the data again,
// and the pushes after it do not meet it at all.
func TestStaleShardCacheDoesNotBlockPush(t *testing.T) {
	e := newEnv(t)
	e.install()
	work, remote := deltaRemotes[0].setup(t, e) // a local remote, recreated below
	data := testutil.RandomBytes(12<<20, 5)
	writeFile(t, filepath.Join(work, "a.bin"), data)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "a")
	e.git(work, "push", "-q", "origin", "main")

	// The remote is recreated empty; the shard cache still lists a.bin's xorbs.
	if err := os.RemoveAll(remote); err != nil {
		t.Fatal(err)
	}
	e.bareRemote(remote)
	e.git(work, "update-ref", "-d", "refs/remotes/origin/main") // else git-lfs thinks a.bin is there
	b := append(append([]byte(nil), data[:6<<20]...), testutil.RandomBytes(1<<20, 6)...)
	writeFile(t, filepath.Join(work, "b.bin"), b) // shares 6 MiB with a.bin
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "b")
	e.git(work, "push", "-q", "origin", "main")
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	if n := len(e.logLines("stale")); n == 0 {
		t.Error("the stale cache was not noticed in the log")
	}
	// The next push does not meet the stale entries again.
	mark := len(e.logLines("stale"))
	writeFile(t, filepath.Join(work, "c.bin"), append(append([]byte(nil), data[6<<20:]...), testutil.RandomBytes(1<<20, 7)...))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "c")
	e.git(work, "push", "-q", "origin", "main")
	if n := len(e.logLines("stale")); n != mark {
		t.Errorf("the push after met the stale cache again (%d log lines)", n-mark)
	}
}
