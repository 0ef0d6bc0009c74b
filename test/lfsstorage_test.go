package test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// Downloads go where git-lfs keeps the repository's objects: with lfs.storage set (on another file
// system where /dev/shm is one) and in a linked work tree. Before, the agent wrote its temp files
// and chunk index under the work tree's own git directory: with lfs.storage on another file system
// every download failed (invalid cross-device link, its .part left where nothing removes it), and
// in a linked work tree its temp files went where git-lfs never cleans and the chunk index named
// objects that are not there.
func TestDownloadsGoWhereGitLFSKeepsObjects(t *testing.T) {
	e := newEnv(t)
	e.install()
	work, remote := e.localRepo(repoOpts{})
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(8<<20, 41))
	writeFile(t, filepath.Join(work, "small.bin"), testutil.RandomBytes(1000, 42))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "two files")
	e.git(work, "push", "-q", "origin", "main")

	// lfs.storage
	{
		storage := filepath.Join(e.home, "media")
		if d, err := os.MkdirTemp("/dev/shm", "xet-lfs-storage-"); err == nil {
			if otherFS(e.home, d) {
				storage = d
			}
			t.Cleanup(func() { os.RemoveAll(d) })
		}
		clone := filepath.Join(e.home, "c1")
		e.git("", "clone", "-q", "--no-checkout", remote, clone)
		e.git(clone, "config", "lfs.storage", storage)
		e.git(clone, "checkout", "-q", "main")
		sameTree(t, work, clone)
		if n := checkObjectsIn(t, filepath.Join(storage, "objects")); n != 2 {
			t.Errorf("%d objects in lfs.storage (%s), want 2", n, storage)
		}
		noFilesUnder(t, filepath.Join(clone, ".git", "lfs"))
		if _, err := os.Stat(filepath.Join(storage, "xet", "chunks")); err != nil {
			t.Errorf("lfs.storage: the chunk index is not beside the objects it names: %v", err)
		}
	}

	// a linked work tree
	{
		clone := filepath.Join(e.home, "c2")
		e.git("", "clone", "-q", "--no-checkout", remote, clone)
		wt := filepath.Join(e.home, "wt")
		e.git(clone, "worktree", "add", "-q", "--detach", wt, "main")
		sameTree(t, work, wt)
		if n := checkLFSObjects(t, clone); n != 2 {
			t.Errorf("%d objects in the repository's .git/lfs/objects, want 2", n)
		}
		noFilesUnder(t, filepath.Join(clone, ".git", "worktrees", "wt", "lfs"))
		if _, err := os.Stat(filepath.Join(clone, ".git", "lfs", "xet", "chunks")); err != nil {
			t.Errorf("a linked work tree: the chunk index is not beside the objects it names: %v", err)
		}
	}
}

// noFilesUnder fails for every file under dir (a directory that does not exist holds none).
func noFilesUnder(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("%s: a file where git-lfs keeps nothing of this repository", p)
		}
		return nil
	})
}

// migrate reads the objects where git-lfs keeps them, lfs.storage included: before, it looked in
// .git/lfs/objects, found nothing, and had nowhere else to get them.
func TestMigrateReadsLFSStorage(t *testing.T) {
	e := newEnv(t)
	e.git("", "lfs", "install")
	work, remote := e.localRepo(repoOpts{})
	storage := filepath.Join(e.home, "media")
	e.git(work, "config", "lfs.storage", storage)
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(3<<20, 43))
	writeFile(t, filepath.Join(work, "b.bin"), testutil.RandomBytes(2000, 44))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "in lfs.storage")
	if n := checkObjectsIn(t, filepath.Join(storage, "objects")); n != 2 {
		t.Fatalf("git-lfs put %d objects in lfs.storage, want 2", n)
	}
	e.pushWithoutLFS(work)
	out, code := e.migrate(work, "--to", remote)
	if code != 0 || figure(t, reMigrated, out) != 2 {
		t.Fatalf("migrate: exit %d, want 2 objects migrated:\n%s", code, out)
	}
	e.install()
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
}

// migrate --write-lfsconfig run from a subdirectory writes and commits the work tree's own
// .lfsconfig, the one git-lfs reads: before, it committed sub/.lfsconfig, which no clone reads.
func TestMigrateWritesTheTopLevelLFSConfig(t *testing.T) {
	e := newEnv(t)
	e.git("", "lfs", "install")
	work, remote := e.localRepo(repoOpts{})
	writeFile(t, filepath.Join(work, "sub", "a.bin"), testutil.RandomBytes(2000, 46))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "a file in sub")
	e.pushWithoutLFS(work)
	out, code := e.migrate(filepath.Join(work, "sub"), "--to", remote, "--write-lfsconfig")
	if code != 0 {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(work, "sub", ".lfsconfig")); err == nil {
		t.Error("migrate wrote sub/.lfsconfig, which git-lfs does not read")
	}
	if files := e.git(work, "show", "--name-only", "--format=", "HEAD"); strings.TrimSpace(files) != ".lfsconfig" {
		t.Errorf("the commit migrate made holds %q, want .lfsconfig", files)
	}
	if url := e.git(work, "config", "-f", ".lfsconfig", "lfs.url"); strings.TrimSpace(url) != remote {
		t.Errorf("lfs.url in .lfsconfig is %q, want %s", url, remote)
	}
}
