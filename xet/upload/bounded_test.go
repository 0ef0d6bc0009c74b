package upload_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// A session whose new xorbs list more chunks than one shard may hold registers them with several
// shards, each within Config.ShardChunks (or a single xorb): first shards of xorbs only, then the
// shard of the file, so every xorb is registered exactly once, the cache gets every shard, the
// store accepts them all (it checks each against the stored xorbs) and the file downloads.
func TestFinishSplitsXorbsAcrossShards(t *testing.T) {
	if testing.Short() {
		t.Skip("a 200 MiB upload; runs without -short")
	}
	const limit = 1500 // a full xorb of random data has about 1000 chunks
	rc := &recCAS{inner: embeddedtest.New(t)}
	cache := newFakeCache()
	s := upload.NewSession(upload.Config{CAS: rc, Cache: cache, ShardChunks: limit, TempDir: t.TempDir()})
	defer s.Close()
	ctx := context.Background()
	data := testutil.RandomBytes(200<<20, 11)
	res, err := s.Upload(ctx, bytes.NewReader(data), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	_, nx, ns := rc.counts()
	if ns < 2 {
		t.Fatalf("%d xorbs registered by %d shard(s), want several shards at %d chunks each", nx, ns, limit)
	}
	listed := map[hash.Hash]int{}
	for i, body := range rc.shards {
		sh, err := shard.Parse(body)
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		last := i == len(rc.shards)-1
		if last && (len(sh.Files) != 1 || sh.Files[0].Hash != res.FileHash) {
			t.Fatalf("the last shard has %d files, want the uploaded file", len(sh.Files))
		}
		if !last && len(sh.Files) != 0 {
			t.Fatalf("shard %d of %d lists %d files; only the last one may", i, ns, len(sh.Files))
		}
		chunks := 0
		for _, x := range sh.Xorbs {
			listed[x.Hash]++
			chunks += len(x.Chunks)
		}
		if chunks > limit && len(sh.Xorbs) > 1 {
			t.Fatalf("shard %d lists %d xorbs with %d chunks, over the limit of %d", i, len(sh.Xorbs), chunks, limit)
		}
	}
	for _, x := range rc.xorbs {
		if listed[x] != 1 {
			t.Fatalf("xorb %s is listed by %d shards, want 1", x, listed[x])
		}
	}
	if len(listed) != len(rc.xorbs) {
		t.Fatalf("shards list %d xorbs, %d were uploaded", len(listed), len(rc.xorbs))
	}
	if len(cache.owned) != ns {
		t.Fatalf("%d shards added to the cache, %d registered", len(cache.owned), ns)
	}
	out := filepath.Join(t.TempDir(), "out")
	sum := sha256.Sum256(data)
	if err := download.Download(ctx, download.Config{CAS: rc.inner}, download.Request{File: res.FileHash,
		Size: int64(len(data)), SHA256: &sum, Path: out}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("downloaded file differs (%v)", err)
	}
}

// With its chunk index at the smallest size the session keeps only a sample of its chunks
// indexed, and still finds a repeat of its data: at the first sampled chunk, then chunk by chunk.
func TestSmallChunkIndexStillDedupes(t *testing.T) {
	const n = 5000 // chunks; the smallest index (1024 slots) holds at most 768
	a := join(t, blocks(n, 1)...)
	for _, tc := range []struct {
		name      string
		indexSize int
		maxNew    int64
	}{
		{"default index", 0, 0},
		{"smallest index", 1, 64 * blockSize},
	} {
		s := upload.NewSession(upload.Config{CAS: embeddedtest.New(t), IndexBytes: tc.indexSize, TempDir: t.TempDir()})
		ctx := context.Background()
		if _, err := s.Upload(ctx, bytes.NewReader(a), nil, nil); err != nil {
			t.Fatal(err)
		}
		for _, part := range []struct {
			what string
			data []byte
		}{{"the same file", a}, {"its second half", a[len(a)/2:]}, {"a middle part", a[n/3*blockSize : 2*n/3*blockSize]}} {
			res, err := s.Upload(ctx, bytes.NewReader(part.data), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.NewBytes > tc.maxNew || res.NewBytes+res.DedupedBytes != int64(len(part.data)) {
				t.Fatalf("%s: %s again: %d new bytes, %d deduped of %d; want at most %d new",
					tc.name, part.what, res.NewBytes, res.DedupedBytes, len(part.data), tc.maxNew)
			}
			t.Logf("%s: %s: %d of %d bytes new", tc.name, part.what, res.NewBytes, len(part.data))
		}
		if err := s.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}
