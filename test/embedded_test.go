package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// After `git-xet-transfer install`, a push to a local bare remote stores LFS files in the remote's
// embedded Xet store, a clone elsewhere gets them back byte for byte, and a second version with a
// 1 % edit costs only a few percent of the file.
func TestEmbeddedPushCloneEdit(t *testing.T) {
	e := newEnv(t)
	e.install()
	work, remote := e.localRepo(repoOpts{patterns: []string{"*.bin", "*.txt", "small/**"}})

	const bigSize = 50 << 20
	big := testutil.RandomBytes(bigSize, 1)
	writeFile(t, filepath.Join(work, "big.bin"), big)
	writeFile(t, filepath.Join(work, "zeros.bin"), make([]byte, 10<<20))
	writeFile(t, filepath.Join(work, "notes.txt"), []byte(strings.Repeat("a text file of one kilobyte\n", 37)[:1024]))
	for i := 0; i < 500; i++ {
		writeFile(t, filepath.Join(work, "small", fmt.Sprintf("f%03d.dat", i)), testutil.RandomBytes(100+i*7, uint64(1000+i)))
	}
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	e.git(work, "push", "-q", "origin", "main")

	storeDir := filepath.Join(remote, "xet")
	if _, err := os.Stat(storeDir); err != nil {
		t.Fatalf("no embedded Xet store in the remote: %v", err)
	}
	if _, err := os.Stat(filepath.Join(remote, "lfs", "objects")); err == nil {
		t.Errorf("the push wrote plain LFS objects into the remote; want everything in %s", storeDir)
	}
	if n := len(e.logLines(`"op":"upload"`, `"mode":"embedded"`, "transfer complete")); n != 503 {
		t.Errorf("%d uploads through the embedded store logged, want 503", n)
	}
	// Zeros and random data: the store holds about the random bytes only.
	v1 := dirSize(t, storeDir)
	t.Logf("store after v1: %d bytes for %d bytes of files", v1, bigSize+10<<20+1024)
	if v1 > bigSize+bigSize/20+2<<20 {
		t.Errorf("store holds %d bytes after v1, want about %d (zeros deduplicated)", v1, bigSize)
	}

	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if n := sameTree(t, work, clone); n != 504 {
		t.Errorf("compared %d files, want 504", n)
	}
	if n := checkLFSObjects(t, clone); n < 503 {
		t.Errorf("clone has %d LFS objects, want 503", n)
	}

	// v2: 1 % of big.bin changed in five places.
	for i := 0; i < 5; i++ {
		off := (i*2 + 1) * bigSize / 11
		copy(big[off:], testutil.RandomBytes(bigSize/500, uint64(77+i)))
	}
	writeFile(t, filepath.Join(work, "big.bin"), big)
	e.git(work, "commit", "-q", "-am", "v2: edit 1% of big.bin")
	e.git(work, "push", "-q", "origin", "main")
	v2 := dirSize(t, storeDir)
	growth := v2 - v1
	t.Logf("store grew by %d bytes (%.2f%% of the file) for a 1%% edit", growth, 100*float64(growth)/bigSize)
	if growth <= 0 || growth > bigSize*5/100 {
		t.Errorf("store grew by %d bytes for a 1%% edit of a %d-byte file, want 0 < growth <= 5%%", growth, bigSize)
	}

	// git pull brings the new version; git lfs fetch --all has every version.
	e.git(clone, "pull", "-q", "origin", "main")
	sameTree(t, work, clone)
	e.git(clone, "lfs", "fetch", "--all", "origin")
	if n := checkLFSObjects(t, clone); n != 504 {
		t.Errorf("after fetch --all the clone has %d LFS objects, want 504 (both versions)", n)
	}
}

// A local remote that already holds plain LFS objects (pushed before install) keeps working: its
// objects are read from <remote>/lfs/objects, and new pushes go to the Xet store.
func TestEmbeddedReadsPlainLFSRemote(t *testing.T) {
	e := newEnv(t)
	e.git("", "lfs", "install")
	work, remote := e.localRepo(repoOpts{fileURL: true})
	old := testutil.RandomBytes(3<<20, 5)
	writeFile(t, filepath.Join(work, "old.bin"), old)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "plain lfs")
	e.git(work, "push", "-q", "origin", "main") // git-lfs's own lfs-standalone-file
	if _, err := os.Stat(filepath.Join(remote, "lfs", "objects")); err != nil {
		t.Fatalf("plain git-lfs did not store into the remote: %v", err)
	}

	e.install()
	writeFile(t, filepath.Join(work, "new.bin"), testutil.RandomBytes(2<<20, 6))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "after install")
	e.git(work, "push", "-q", "origin", "main")
	if _, err := os.Stat(filepath.Join(remote, "xet")); err != nil {
		t.Fatalf("the push after install did not use the Xet store: %v", err)
	}

	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", "file://"+remote, clone)
	sameTree(t, work, clone)
	if len(e.logLines(`"mode":"lfs-file"`, `"op":"download"`)) != 1 || len(e.logLines(`"mode":"embedded"`, `"op":"download"`)) != 1 {
		t.Errorf("want one download from the plain LFS objects and one from the Xet store")
	}
}

// A pushed object missing from the remote gives a message naming the object and the fix.
func TestEmbeddedMissingObjectSaysWhy(t *testing.T) {
	e := newEnv(t)
	e.install()
	work, remote := e.localRepo(repoOpts{})
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(1<<20, 9))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "x")
	e.git(work, "push", "-q", "origin", "main")
	if err := os.RemoveAll(filepath.Join(remote, "xet")); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", "--no-checkout", remote, clone)
	out, err := e.gitErr(clone, "lfs", "fetch", "origin", "main")
	if err == nil {
		t.Fatalf("fetch of a missing object succeeded:\n%s", out)
	}
	if !strings.Contains(out, "neither in the Xet store") || !strings.Contains(out, "git lfs push --all") {
		t.Errorf("message does not say what is missing and how to fix it:\n%s", out)
	}
	if n := checkLFSObjects(t, clone); n != 0 {
		t.Errorf("%d objects appeared", n)
	}
}
