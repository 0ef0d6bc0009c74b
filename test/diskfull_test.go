package test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// smallDisk mounts a tmpfs of size bytes (a disk that fills up) and returns its path and a
// function that makes it big enough for anything the test writes (space freed). It skips where
// mounting is not allowed (not root, or a container without the capability): the server's side is
// then covered by the injected ENOSPC of xet/server's TestDiskFull.
func smallDisk(t *testing.T, size string) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); disk-full rows need it", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir, func() {
		if out, err := exec.Command("mount", "-o", "remount,size=1g", dir).CombinedOutput(); err != nil {
			t.Fatalf("growing the tmpfs: %v: %s", err, out)
		}
	}
}

// A full disk at each place a push or a clone writes: the command fails with a message saying
// the space ran out, nothing partial is visible, and once space is freed the same command succeeds.
func TestDiskFull(t *testing.T) {
	needLinux(t)
	data := testutil.RandomBytes(48<<20, 95)
	t.Run("server data dir", func(t *testing.T) {
		dir, grow := smallDisk(t, "24m")
		e := newEnv(t)
		e.install()
		srv := startServerAt(t, filepath.Join(dir, "cas"), "")
		work, remote := batchRepo(t, e, srv.url+"/team/full.git/info/lfs")
		pushFails(t, e, work, data, "out of storage space")
		grow()
		e.git(work, "push", "-q", "origin", "main")
		cloneSame(t, e, work, remote)
		checkStore(t, filepath.Join(dir, "cas"))
	})
	t.Run("embedded store", func(t *testing.T) {
		dir, grow := smallDisk(t, "24m")
		e := newEnv(t)
		e.install()
		work, remote := e.localRepo(repoOpts{remote: filepath.Join(dir, "remote.git")})
		pushFails(t, e, work, data, "no space left")
		grow()
		e.git(work, "push", "-q", "origin", "main")
		cloneSame(t, e, work, remote)
		checkStore(t, filepath.Join(remote, "xet"))
	})
	t.Run("clone", func(t *testing.T) {
		dir, grow := smallDisk(t, "40m")
		e := newEnv(t)
		e.install()
		srv := startServer(t, "")
		work, remote := batchRepo(t, e, srv.url+"/team/full.git/info/lfs")
		writeFile(t, filepath.Join(work, "big.bin"), data)
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", "x")
		e.git(work, "push", "-q", "origin", "main")
		clone := filepath.Join(dir, "clone")
		skip := e.cmd("", "git", "clone", "-q", remote, clone)
		skip.Env = append(skip.Env, "GIT_LFS_SKIP_SMUDGE=1")
		if out, err := skip.CombinedOutput(); err != nil {
			t.Fatalf("clone: %v\n%s", err, out)
		}
		out, err := e.gitErr(clone, "lfs", "pull")
		if err == nil || !strings.Contains(out, "no space left") {
			t.Fatalf("git lfs pull on a full disk: %v\n%s", err, out)
		}
		if n := checkLFSObjects(t, clone); n != 0 {
			t.Fatalf("%d objects in .git/lfs/objects after the failed pull", n)
		}
		grow()
		e.git(clone, "lfs", "pull")
		sameTree(t, work, clone)
	})
	t.Run("shard cache", func(t *testing.T) {
		dir, _ := smallDisk(t, "16k")
		e := newEnv(t)
		e.vars = append(e.vars, "HF_XET_CACHE="+dir)
		e.install()
		srv := startServer(t, "")
		work, remote := batchRepo(t, e, srv.url+"/team/full.git/info/lfs")
		writeFile(t, filepath.Join(work, "big.bin"), data)
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", "x")
		e.git(work, "push", "-q", "origin", "main") // the cache is an optimisation: a full one only warns
		cloneSame(t, e, work, remote)
	})
}

// pushFails commits data as big.bin and checks that the push fails with a message containing want.
func pushFails(t *testing.T, e *env, work string, data []byte, want string) {
	t.Helper()
	writeFile(t, filepath.Join(work, "big.bin"), data)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "x")
	out, err := e.gitErr(work, "push", "origin", "main")
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("push to a full disk: %v; want a message with %q\n%s", err, want, out)
	}
	t.Logf("push to a full disk: %s", lastLines(out, 2))
}

func cloneSame(t *testing.T, e *env, work, remote string) {
	t.Helper()
	clone := filepath.Join(e.home, "clone")
	os.RemoveAll(clone)
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
}

func checkStore(t *testing.T, dir string) {
	t.Helper()
	if report, ok, err := store.Fsck(context.Background(), dir, store.FsckOptions{CleanTemp: true}); err != nil || !ok {
		t.Errorf("store check after the full disk: %v\n%s", err, report)
	}
}
