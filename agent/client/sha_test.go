package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/agent"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// The agent computes a file's SHA-256 while chunking and refuses to register it under an oid it
// does not hash to, naming both; nothing is registered under the wrong oid, and the right oid
// uploads normally afterwards.
func TestUploadRefusesAWrongOid(t *testing.T) {
	dir, storeDir, tr := storeTransferer(t, zerolog.Nop())
	ctx := context.Background()
	data := testutil.RandomBytes(300_000, 5)
	path := filepath.Join(dir, "obj")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	right := sha256.Sum256(data)
	wrong := sha256.Sum256([]byte("something else"))
	_, err := tr.Upload(ctx, agent.Object{Oid: hex.EncodeToString(wrong[:]), Size: int64(len(data)), Path: path}, nil)
	if err == nil || !strings.Contains(err.Error(), hex.EncodeToString(right[:])) || !strings.Contains(err.Error(), hex.EncodeToString(wrong[:])) {
		t.Fatalf("upload under a wrong oid: %v; want an error naming both SHA-256s", err)
	}
	st, err := store.Open(storeDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.LookupSHA256(ctx, "", hash.FromSHA256(wrong)); err == nil {
		t.Fatal("the wrong oid was registered")
	}
	if _, err := tr.Upload(ctx, agent.Object{Oid: hex.EncodeToString(right[:]), Size: int64(len(data)), Path: path}, nil); err != nil {
		t.Fatalf("upload under the right oid: %v", err)
	}
	if _, _, err := st.LookupSHA256(ctx, "", hash.FromSHA256(right)); err != nil {
		t.Fatalf("the right oid is not registered: %v", err)
	}
}

// storeTransferer returns an upload Transferer of this process writing to an embedded store in a
// temp dir (storeDir, under dir), with a shard cache of its own; closed at the end of the test.
func storeTransferer(t *testing.T, log zerolog.Logger) (dir, storeDir string, tr agent.Transferer) {
	t.Helper()
	dir = t.TempDir()
	storeDir = filepath.Join(dir, "store")
	c := Open(Options{Log: log, Git: Git{Dir: dir}, StoreDir: func() string { return storeDir }, Cache: CacheOptions{Root: filepath.Join(dir, "cache")}},
		agent.Init{Operation: "upload", Remote: "origin", ConcurrentTransfers: 8}, nil)
	t.Cleanup(func() { c.Close() })
	tr = c
	return dir, storeDir, tr
}
