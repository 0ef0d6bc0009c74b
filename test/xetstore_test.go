package test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// xet.store set in the global config wins for any remote, an http:// one included (as in
// git-lfs's t-custom-transfers, a standalone agent for every URL): the push stores the objects in
// that directory without contacting the remote, and a fetch reads them back from it.
func TestXetStoreWinsForNetworkRemote(t *testing.T) {
	e := newEnv(t)
	e.install()
	store := filepath.Join(e.home, "team-store")
	e.git("", "config", "--global", "xet.store", store)
	e.git("", "config", "--global", "lfs.standalonetransferagent", "xet")
	e.git("", "config", "--global", "lfs.locksverify", "false")
	work := filepath.Join(e.home, "work")
	e.newRepo(work, "*.bin")
	data := testutil.RandomBytes(3<<20, 77)
	writeFile(t, filepath.Join(work, "model.bin"), data)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	// Nothing listens there: any contact with the remote would fail the push.
	e.git(work, "remote", "add", "origin", "http://127.0.0.1:9/org/repo.git")
	e.git(work, "lfs", "push", "origin", "main")
	if size := dirSize(t, store); size < 3<<20 {
		t.Fatalf("the store %s holds %d bytes after the push, want the file's 3 MiB", store, size)
	}
	if n := len(e.logLines(`"op":"upload"`, `"mode":"embedded"`)); n == 0 {
		t.Error("no upload through the embedded store logged")
	}

	if err := os.RemoveAll(filepath.Join(work, ".git", "lfs", "objects")); err != nil {
		t.Fatal(err)
	}
	e.git(work, "lfs", "fetch", "origin", "main")
	if n := checkLFSObjects(t, work); n != 1 {
		t.Fatalf("%d LFS objects after the fetch, want 1", n)
	}
}
