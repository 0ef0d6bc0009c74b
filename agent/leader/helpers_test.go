package leader

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// storeLeader returns the Leader of an op ("upload" or "download") process over a real client of
// an embedded store in storeDir, with a shard cache under dir, the work tree of a git repository
// (git-lfs's temp directory is in it); closed at the end of the test. It leads, as HandOff makes
// it when no other process leads. wrap, when set, wraps the Coordinator the client is given.
func storeLeader(t *testing.T, log zerolog.Logger, op, dir, storeDir string, wrap func(client.Coordinator) client.Coordinator) *Leader {
	t.Helper()
	gitInit(t, dir)
	o := client.Options{Log: log, Git: client.Git{Dir: dir}, StoreDir: func() string { return storeDir },
		Cache: client.CacheOptions{Root: filepath.Join(dir, "cache")}}
	open := New(Options{Log: log}, func(init agent.Init, co client.Coordinator) Client {
		if wrap != nil {
			co = wrap(co)
		}
		return client.Open(o, init, co)
	})
	tr, err := open(context.Background(), agent.Init{Operation: op, Remote: "origin", ConcurrentTransfers: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	l := tr.(*Leader)
	l.leading.Store(true)
	return l
}

// gitInit makes dir a git repository (once).
func gitInit(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return
	}
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git missing")
		}
		t.Skip("git missing")
	}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
}

// oidHash is the store's form of an oid (hash.FromSHA256 of its digest).
func oidHash(t *testing.T, oid string) hash.Hash {
	t.Helper()
	h, err := hash.ParseSHA256(oid)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
