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
	onBothStores(t, testPoisonRepair)
}

// onBothStores runs test on a repository whose remote is xet-server and on one whose remote holds
// an embedded store; data is the directory the remote's store lies in.
func onBothStores(t *testing.T, test func(t *testing.T, e *env, work, remote, data string)) {
	t.Run("xet-server", func(t *testing.T) {
		e := newEnv(t)
		e.install()
		s := startServer(t, "")
		work, remote := batchRepo(t, e, s.url+"/team/repo.git/info/lfs")
		test(t, e, work, remote, s.data)
	})
	t.Run("embedded", func(t *testing.T) {
		e := newEnv(t)
		e.install()
		work, remote := e.localRepo(repoOpts{})
		test(t, e, work, remote, filepath.Join(remote, "xet"))
	})
}

// mapToWrongFile pushes b.bin normally, then writes into the store under data a mapping of a.bin's
// oid to b.bin's file, as an older store recorded mappings (kind "sha256", unverified) or as if it
// had been verified ("sha256v"), and pushes a.bin's commit without its LFS object. a.bin has
// b.bin's size: only the SHA-256 tells them apart. It returns both files' bytes and a.bin's oid.
func mapToWrongFile(t *testing.T, e *env, work, data, kind string) (a, b []byte, oidA string) {
	t.Helper()
	b = testutil.RandomBytes(2<<20, 31)
	writeFile(t, filepath.Join(work, "b.bin"), b)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "b")
	e.git(work, "push", "-q", "origin", "main")
	oidB := sha256.Sum256(b)
	root, verifiedB, rec := findEntry(t, data, "sha256v", hex.EncodeToString(oidB[:]))

	a = testutil.RandomBytes(len(b), 32)
	sum := sha256.Sum256(a)
	oidA = hex.EncodeToString(sum[:])
	wrong := filepath.Join(root, filepath.FromSlash(path.Dir(path.Dir(verifiedB))), kind, oidA)
	if err := os.MkdirAll(filepath.Dir(wrong), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrong, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(work, "a.bin"), a)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "a")
	e.pushWithoutLFS(work)
	return a, b, oidA
}

func testPoisonRepair(t *testing.T, e *env, work, remote, data string) {
	a, _, x := mapToWrongFile(t, e, work, data, "sha256")
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

// A store that claims a verified mapping it does not have (a corrupt or hostile store; our own
// stores write one only after hashing the file) cannot get the wrong bytes into a clone: the agent
// leaves the SHA-256 of such a download to git-lfs, which checks every file a custom adapter hands
// it. The clone fails, and neither the working tree nor git-lfs's object store holds the wrong file.
func TestLyingVerifiedMappingIsRefused(t *testing.T) {
	onBothStores(t, func(t *testing.T, e *env, work, remote, data string) {
		_, b, x := mapToWrongFile(t, e, work, data, "sha256v")
		clone := filepath.Join(e.home, "clone")
		out, err := e.gitErr("", "clone", "-q", remote, clone)
		if err == nil {
			t.Fatalf("the clone succeeded although a.bin's oid maps to b.bin's file:\n%s", out)
		}
		if !strings.Contains(out, x) {
			t.Errorf("the failed clone does not name the object %s:\n%s", x, out)
		}
		if got, err := os.ReadFile(filepath.Join(clone, "a.bin")); err == nil && string(got) == string(b) {
			t.Fatal("a.bin in the clone holds b.bin's bytes")
		}
		stored := filepath.Join(clone, ".git", "lfs", "objects", x[:2], x[2:4], x)
		if _, err := os.Stat(stored); err == nil {
			t.Fatalf("git-lfs stored %s although its bytes are another file's", x)
		}
	})
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
