package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/rs/zerolog"
)

// Close gives back every file the client opened for a push and a fetch: the embedded store's, the
// shard cache's, the chunk index's. An agent process ends after Close, but a process that opens
// and closes clients and lives on (a test) must not keep them.
func TestCloseReleasesEveryFile(t *testing.T) {
	dir, opts := repoClientOptions(t)
	ctx := context.Background()
	var objs []agent.Object
	up := Open(opts, agent.Init{Operation: "upload", Remote: "origin", ConcurrentTransfers: 8}, nil)
	for i, n := range []int{300_000, 3 << 20} {
		data := testutil.RandomBytes(n, uint64(i))
		path := filepath.Join(dir, "obj"+string(rune('a'+i)))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		o := agent.Object{Oid: hex.EncodeToString(sum[:]), Size: int64(n), Path: path}
		if _, err := up.Upload(ctx, o, nil); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	if err := up.Close(); err != nil {
		t.Fatal(err)
	}
	if open := testutil.OpenFilesUnder(t, dir); len(open) > 0 {
		t.Fatalf("after the upload client's Close, %d files are still open: %v", len(open), open)
	}
	down := Open(opts, agent.Init{Operation: "download", Remote: "origin", ConcurrentTransfers: 8}, nil)
	for _, o := range objs {
		o.Path = ""
		p, err := down.Download(ctx, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Path == "" {
			t.Fatalf("download of %s handed over no file", o.Oid)
		}
		os.Remove(p.Path)
	}
	if err := down.Close(); err != nil {
		t.Fatal(err)
	}
	if open := testutil.OpenFilesUnder(t, dir); len(open) > 0 {
		t.Fatalf("after the download client's Close, %d files are still open: %v", len(open), open)
	}
}

// repoClientOptions returns a new git repository (dir) and the options of a client in it, with an
// embedded store and a shard cache of its own under dir.
func repoClientOptions(t *testing.T) (dir string, opts Options) {
	t.Helper()
	dir = t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	storeDir := filepath.Join(dir, "store")
	return dir, Options{Log: zerolog.Nop(), Git: Git{Dir: dir}, StoreDir: func() string { return storeDir }, Cache: CacheOptions{Root: filepath.Join(dir, "cache")}}
}
