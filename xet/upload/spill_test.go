package upload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas/castest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// withListCache runs the test with at most n chunk lists of cut xorbs in memory.
func withListCache(t *testing.T, n int) {
	old := listCacheSize
	listCacheSize = n
	t.Cleanup(func() { listCacheSize = old })
}

// A session keeps the chunk lists of its cut xorbs in an unlinked temp file, not in memory: with
// one list in memory, a file uploaded again is deduped whole against its xorbs, whose lists are
// read back in turn, the store accepts the shard built from lists read back (it checks every
// chunk), the file downloads byte for byte, and no file is left in the temp dir.
func TestSessionDedupesAgainstSpilledLists(t *testing.T) {
	if testing.Short() {
		t.Skip("150 MiB uploaded twice; runs without -short")
	}
	withListCache(t, 1)
	c := embeddedtest.New(t)
	tmp := t.TempDir()
	s := NewSession(Config{CAS: c, TempDir: tmp})
	ctx := context.Background()
	a := testutil.RandomBytes(150<<20, 1) // two full xorbs cut while uploading, the rest kept open
	resA, err := s.Upload(ctx, bytes.NewReader(a), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.lists.f == nil || s.lists.f.Size() == 0 {
		t.Fatal("no chunk list was spilled")
	}
	inMemory := 0
	for _, x := range s.sxorbs {
		if x.cut && x.list != nil {
			inMemory++
		}
	}
	if cut := len(s.newXorbs); cut < 2 || inMemory > 1 {
		t.Fatalf("%d xorbs cut, %d chunk lists in memory; want at least 2 and at most 1", cut, inMemory)
	}
	again, err := s.Upload(ctx, bytes.NewReader(a), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.NewBytes != 0 || again.DedupedBytes != int64(len(a)) || again.FileHash != resA.FileHash {
		t.Fatalf("second upload of A: new %d, deduped %d of %d, hash %s (first %s)",
			again.NewBytes, again.DedupedBytes, len(a), again.FileHash, resA.FileHash)
	}
	if runtime.GOOS != "windows" {
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("%d files in the temp dir while the session is open (the spill is unlinked at once)", len(left))
		}
	}
	if err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("%d files left in the temp dir after Close", len(left))
	}
	out := filepath.Join(t.TempDir(), "a")
	sum := sha256.Sum256(a)
	if err := download.Download(ctx, download.Config{CAS: c}, download.Request{File: again.FileHash, Size: int64(len(a)),
		SHA256: &sum, Path: out}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("downloaded A differs (%v)", err)
	}
}

// A chunk list that cannot be read back fails the upload and the Finish with an error saying so:
// no wrong dedupe, no shard registered from a list the session does not have.
func TestSessionFailsWhenASpilledListIsLost(t *testing.T) {
	withListCache(t, 1)
	rc := castest.NewCounting(embeddedtest.New(t))
	s := NewSession(Config{CAS: rc, TempDir: t.TempDir()})
	defer s.Close()
	ctx := context.Background()
	a := testutil.RandomBytes(150<<20, 3)
	if _, err := s.Upload(ctx, bytes.NewReader(a), nil, nil); err != nil {
		t.Fatal(err)
	}
	s.lists.f.Close() // the spill becomes unreadable
	_, err := s.Upload(ctx, bytes.NewReader(a), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "reading back the chunk list") {
		t.Fatalf("upload with a lost chunk list: %v", err)
	}
	if err := s.Finish(ctx); err == nil {
		t.Fatal("Finish succeeded with a lost chunk list")
	}
	if n := rc.Shards.Load(); n != 0 {
		t.Fatalf("%d shards registered", n)
	}
}

// Without a usable temp dir the session keeps the lists in memory, says so in the log, and
// uploads as usual.
func TestSessionWithoutTempDirKeepsListsInMemory(t *testing.T) {
	withListCache(t, 1)
	var logs logbuf.Buffer
	c := embeddedtest.New(t)
	s := NewSession(Config{CAS: c, TempDir: filepath.Join(t.TempDir(), "missing"), Log: zerolog.New(&logs)})
	defer s.Close()
	ctx := context.Background()
	a := testutil.RandomBytes(70<<20, 4) // one xorb cut
	res, err := s.Upload(ctx, bytes.NewReader(a), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Upload(ctx, bytes.NewReader(a), nil, nil)
	if err != nil || again.NewBytes != 0 {
		t.Fatalf("second upload: %v, new bytes %d", err, again.NewBytes)
	}
	if err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "keeping them in memory") {
		t.Fatalf("no warning logged:\n%s", logs.String())
	}
	if _, _, err := c.Store().LookupSHA256(ctx, "", hash.FromSHA256(sha256.Sum256(a))); err != nil {
		t.Fatalf("file %s not registered: %v", res.FileHash, err)
	}
}
