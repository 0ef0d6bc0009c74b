package test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// A push over its repository's quota fails with the quota's message shown to the user; another
// repository still pushes; gc then leaves the store as it was before the refused push, and fsck is
// clean.
func TestQuotaPush(t *testing.T) {
	buildServer(t)
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--repo-quota", "3MiB")
	e := newEnv(t)
	e.install()
	work, _ := batchRepo(t, e, "http://"+s.addr+"/team/q.git/info/lfs")
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(2<<20, 71))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "a")
	e.git(work, "push", "-q", "origin", "main")
	before := stats(t, s.data)

	writeFile(t, filepath.Join(work, "b.bin"), testutil.RandomBytes(2<<20, 72))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "b")
	out, err := e.gitErr(work, "push", "-q", "origin", "main")
	if err == nil || !strings.Contains(out, "repository team/q is over its 3 MiB quota on "+s.addr) {
		t.Fatalf("push over the quota: %v\n%s", err, out)
	}
	t.Logf("the user sees: %s", out)
	e2 := newEnv(t)
	e2.install()
	other, _ := batchRepo(t, e2, "http://"+s.addr+"/team/other.git/info/lfs")
	writeFile(t, filepath.Join(other, "c.bin"), testutil.RandomBytes(2<<20, 73))
	e2.git(other, "add", ".")
	e2.git(other, "commit", "-q", "-m", "c")
	e2.git(other, "push", "-q", "origin", "main")

	time.Sleep(1100 * time.Millisecond) // past gc's grace period below
	for range 2 {
		if b, err := exec.Command(filepath.Join(binDir, "xet-server"), "gc", "--grace", "1s", "--unsafe-grace", s.data).CombinedOutput(); err != nil {
			t.Fatalf("gc: %v\n%s", err, b)
		}
	}
	after := stats(t, s.data)
	if !strings.Contains(after, "team/q      1  2.0 MiB  2.0 MiB") || !strings.Contains(before, "team/q      1  2.0 MiB  2.0 MiB") {
		t.Fatalf("team/q before the refused push:\n%s\nafter it and gc:\n%s", before, after)
	}
	fsckServer(t, s.data)
}

// stats is xet-server stats' table for a data directory.
func stats(t *testing.T, data string) string {
	t.Helper()
	b, err := exec.Command(filepath.Join(binDir, "xet-server"), "stats", data).CombinedOutput()
	if err != nil {
		t.Fatalf("stats: %v\n%s", err, b)
	}
	return string(b)
}

// Issue 41, item 6, with real pushes: a user's quota counts all the user's repositories, of every
// type the Hub has (alice/m, datasets/alice/d): the second push, which would take alice over her
// 3 MiB, fails with the quota's message (before, datasets/alice/d counted for an owner
// "datasets").
func TestOwnerQuotaAcrossRepositoryTypes(t *testing.T) {
	buildServer(t)
	dir := t.TempDir()
	users, quotas := filepath.Join(dir, "users"), filepath.Join(dir, "quotas")
	writeFile(t, users, []byte(servertest.UserLine("alice", "pw-alice", ":write:"+"alice/*,datasets/alice/*")))
	writeFile(t, quotas, []byte("user:alice 3MiB\n"))
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--users", users, "--quotas", quotas)
	push := func(repo string, seed uint64) (string, error) {
		e := newEnv(t)
		e.install()
		work, _ := batchRepo(t, e, "http://alice:pw-alice@"+s.addr+"/"+repo+".git/info/lfs")
		writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(2<<20, seed))
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", "a")
		return e.gitErr(work, "push", "-q", "origin", "main")
	}
	if out, err := push("alice/m", 81); err != nil {
		t.Fatalf("first push: %v\n%s", err, out)
	}
	out, err := push("datasets/alice/d", 82)
	if err == nil || !strings.Contains(out, "the repositories of alice are over their 3 MiB quota on "+s.addr) {
		t.Fatalf("a push to datasets/alice/d beside alice/m's 2 MiB: %v\n%s", err, out)
	}
}
