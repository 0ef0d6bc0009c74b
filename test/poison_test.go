package test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// An oid mapped to the wrong file (as a bug or a hostile upload could leave it in a store written
// before mappings were verified) fails a clone with an error naming the oid and the Xet file; a
// normal push of the real content repairs the mapping, and the clone then succeeds.
func TestPoisonedOidIsRepairedByAPush(t *testing.T) {
	t.Run("xet-server", func(t *testing.T) {
		e := newEnv(t)
		e.install()
		s := startServer(t, "")
		work, remote := batchRepo(t, e, s.url+"/team/repo.git/info/lfs")
		testPoisonRepair(t, e, work, remote, s.data)
	})
	t.Run("embedded", func(t *testing.T) {
		e := newEnv(t)
		e.install()
		work, remote := e.localRepo(repoOpts{})
		testPoisonRepair(t, e, work, remote, filepath.Join(remote, "xet"))
	})
}

// testPoisonRepair runs the poisoning scenario on a repository whose LFS data ends up in the store
// directory data.
func testPoisonRepair(t *testing.T, e *env, work, remote, data string) {
	// b.bin is pushed normally: its verified mapping names the file of B.
	b := testutil.RandomBytes(2<<20, 31)
	writeFile(t, filepath.Join(work, "b.bin"), b)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "b")
	e.git(work, "push", "-q", "origin", "main")
	oidB := sha256.Sum256(b)
	root, verifiedB, rec := findEntry(t, data, "sha256v", hex.EncodeToString(oidB[:]))

	// a.bin's oid X is mapped to B's file the way an old store recorded mappings (unverified), and
	// its commit reaches the remote without its LFS object.
	a := testutil.RandomBytes(3<<20, 32)
	oidA := sha256.Sum256(a)
	x := hex.EncodeToString(oidA[:])
	legacy := filepath.Join(root, filepath.FromSlash(path.Dir(path.Dir(verifiedB))), "sha256", x)
	if err := os.MkdirAll(filepath.Dir(legacy), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(legacy, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(work, "a.bin"), a)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "a")
	e.pushWithoutLFS(work)

	clone := filepath.Join(e.home, "clone1")
	out, err := e.gitErr("", "clone", "-q", remote, clone)
	if err == nil {
		if got, _ := os.ReadFile(filepath.Join(clone, "a.bin")); string(got) == string(a) {
			t.Fatal("the clone got a.bin although its oid maps to another file")
		}
	}
	logs := strings.Join(e.logLines(`"op":"download"`, x), "\n")
	if !strings.Contains(logs, "maps that oid to the wrong file") || !strings.Contains(logs, "Xet file") {
		t.Fatalf("the failed download does not say which oid and Xet file (clone: %v %s):\n%s", err, out, logs)
	}

	// The repair: a normal push of a.bin (by oid: its commit is on the remote already). The server does not call X "already stored" (its mapping
	// is not verified), the agent uploads, and the store writes the verified mapping.
	e.git(work, "lfs", "push", "--object-id", "origin", x)
	clone2 := filepath.Join(e.home, "clone2")
	e.git("", "clone", "-q", remote, clone2)
	if got, err := os.ReadFile(filepath.Join(clone2, "a.bin")); err != nil || string(got) != string(a) {
		t.Fatalf("after the repair push, a.bin in a clone: %d bytes, %v", len(got), err)
	}
}

// findEntry finds, in the store under root (a directory holding "packs"), the entry named name in a
// directory called dir, and returns the store's root, the entry's name and its bytes.
func findEntry(t *testing.T, root, dir, name string) (string, string, []byte) {
	t.Helper()
	var storeRoot string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "packs" {
			storeRoot = filepath.Dir(p)
			return filepath.SkipAll
		}
		return err
	})
	if storeRoot == "" {
		t.Fatalf("no store under %s", root)
	}
	st, err := store.Open(storeRoot, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names, err := st.Backend().List(ctx, "ns/")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if path.Base(n) == name && path.Base(path.Dir(n)) == dir {
			b, err := st.Backend().Open(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			data := make([]byte, b.Size())
			if _, err := b.ReadAt(ctx, data, 0); err != nil {
				t.Fatal(err)
			}
			return storeRoot, n, data
		}
	}
	t.Fatalf("no %s/%s in the store at %s", dir, name, storeRoot)
	return "", "", nil
}
