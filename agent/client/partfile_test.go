package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// Two `git lfs pull`s at once in one repository download the same large file into one temp
// directory. The file the first hands git-lfs is its own: the second, which starts once the first
// let its resumable record go and before git-lfs moved the file, writes a file of its own, not
// the one git-lfs is moving (into its object store, where a later truncation by the second would
// spoil the object).
func TestEachLargeDownloadHandsOverAFileOfItsOwn(t *testing.T) {
	dir, opts := repoClientOptions(t)
	ctx := context.Background()
	data := testutil.RandomBytes(3<<20, 61)
	path := filepath.Join(dir, "obj")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	obj := agent.Object{Oid: hex.EncodeToString(sum[:]), Size: int64(len(data)), Path: path}
	up := Open(opts, agent.Init{Operation: "upload", Remote: "origin", ConcurrentTransfers: 8}, nil)
	if _, err := up.Upload(ctx, obj, nil); err != nil {
		t.Fatal(err)
	}
	if err := up.Close(); err != nil {
		t.Fatal(err)
	}
	obj.Path = ""
	var handed []string
	for range 2 { // two agent processes, one after the other, neither file moved yet
		down := Open(opts, agent.Init{Operation: "download", Remote: "origin", ConcurrentTransfers: 8}, nil)
		res, err := down.Download(ctx, obj, nil)
		if cerr := down.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		handed = append(handed, res.Path)
	}
	a, errA := os.Stat(handed[0])
	b, errB := os.Stat(handed[1])
	if errA != nil || errB != nil {
		t.Fatalf("the handed-over files: %v, %v", errA, errB)
	}
	if os.SameFile(a, b) {
		t.Errorf("both downloads handed over the same file %s", handed[1])
	}
	for _, p := range handed {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s does not hold the object (%v)", p, err)
		}
	}
}
