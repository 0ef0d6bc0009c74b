package test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// git-lfs takes lfs.url (here from the committed .lfsconfig) before remote.<r>.lfsurl (here in
// .git/config): the agent stores a push where git-lfs says the objects go, so a fresh clone, which
// has only the .lfsconfig, gets the files back.
func TestLfsconfigURLWinsOverRemoteLFSURL(t *testing.T) {
	e := newEnv(t)
	e.install()
	a := filepath.Join(e.home, "a.git")
	b := filepath.Join(e.home, "b.git")
	work := filepath.Join(e.home, "work")
	e.git("", "init", "-q", "--bare", a)
	e.git("", "init", "-q", "--bare", b)
	e.newRepo(work, "*.bin")
	writeFile(t, filepath.Join(work, ".lfsconfig"), []byte("[lfs]\n\turl = "+a+"\n"))
	data := testutil.RandomBytes(3<<20, 7)
	writeFile(t, filepath.Join(work, "f.bin"), data)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	e.git(work, "remote", "add", "origin", a)
	e.git(work, "config", "remote.origin.lfsurl", b)
	e.git(work, "push", "-q", "origin", "main")

	if _, err := os.Stat(filepath.Join(a, "xet")); err != nil {
		t.Errorf("no Xet store in %s, where lfs.url sends the objects: %v", a, err)
	}
	if _, err := os.Stat(filepath.Join(b, "xet")); err == nil {
		t.Errorf("the push wrote into %s (remote.origin.lfsurl), which git-lfs does not use when lfs.url is set", b)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", a, clone)
	if n := sameTree(t, work, clone); n != 3 { // f.bin, .gitattributes, .lfsconfig
		t.Errorf("compared %d files, want 3", n)
	}
}
