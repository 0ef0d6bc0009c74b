package download_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/localshards"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas/castest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

func uploadAll(t testing.TB, c cas.Client, files ...[]byte) []*upload.FileResult {
	t.Helper()
	return uploadWith(t, upload.Config{CAS: c, Policy: xorb.PolicyAuto}, files...)
}

func uploadWith(t testing.TB, cfg upload.Config, files ...[]byte) []*upload.FileResult {
	t.Helper()
	ctx := context.Background()
	s := upload.NewSession(cfg)
	var out []*upload.FileResult
	for _, f := range files {
		r, err := s.Upload(ctx, bytes.NewReader(f), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	return out
}

func fetchFile(t testing.TB, c cas.Client, res *upload.FileResult, rng *casapi.ByteRange) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out.bin")
	sum := res.SHA256
	err := download.Download(context.Background(), download.Config{CAS: c}, download.Request{
		File: res.FileHash, Range: rng, SHA256: &sum, Size: res.Size, Path: p})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTripLocal(t *testing.T) {
	c := embeddedtest.New(t)
	for _, n := range []int{0, 1, 8 << 10, 1 << 20, 9<<20 + 12345} {
		data := testutil.RandomBytes(n, uint64(n))
		res := uploadAll(t, c, data)[0]
		if res.Size != int64(n) || res.SHA256 != sha256.Sum256(data) {
			t.Fatalf("%d bytes: result size %d sha %x", n, res.Size, res.SHA256)
		}
		if n == 0 && res.FileHash != hash.Zero {
			t.Fatalf("empty file hash %s", res.FileHash)
		}
		got := fetchFile(t, c, res, nil)
		if !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: downloaded %d bytes that differ", n, len(got))
		}
	}
}

func TestManySmallFilesShareXorbs(t *testing.T) {
	cc := castest.NewCounting(embeddedtest.New(t))
	var files [][]byte
	for i := range 40 {
		files = append(files, testutil.RandomBytes(1000+i*3000, uint64(100+i)))
	}
	res := uploadAll(t, cc, files...)
	if n := cc.Xorbs.Load(); n >= int64(len(files)) || n == 0 {
		t.Fatalf("%d files stored in %d xorbs; want fewer xorbs than files", len(files), n)
	}
	for i, r := range res {
		if got := fetchFile(t, cc, r, nil); !bytes.Equal(got, files[i]) {
			t.Fatalf("file %d differs after the round trip", i)
		}
	}
}

func TestEditedVersionStoresFewBytes(t *testing.T) {
	size := 24 << 20
	if !testing.Short() {
		size = 64 << 20
	}
	c := embeddedtest.New(t)
	cache, err := localshards.Open(t.TempDir(), localshards.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	cfg := upload.Config{CAS: c, Cache: cache, GlobalDedupe: true}
	v1 := testutil.RandomBytes(size, 7)
	uploadWith(t, cfg, v1)
	v2 := bytes.Clone(v1)
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		at := r.IntN(size - 100)
		copy(v2[at:], testutil.RandomBytes(100, uint64(at)))
	}
	res := uploadWith(t, cfg, v2)[0]
	if limit := int64(5 * 2 * 131072); res.NewBytes > limit {
		t.Fatalf("5 edits of 100 bytes stored %d new bytes, want <= %d", res.NewBytes, limit)
	}
	if res.NewBytes+res.DedupedBytes != int64(size) {
		t.Fatalf("new %d + deduped %d != size %d", res.NewBytes, res.DedupedBytes, size)
	}
	if got := fetchFile(t, c, res, nil); !bytes.Equal(got, v2) {
		t.Fatal("edited version differs after the round trip")
	}
}

func TestRangeDownloads(t *testing.T) {
	c := embeddedtest.New(t)
	// Two xorbs' worth at least: the policy none keeps xorb boundaries at 64 MiB of raw data.
	data := testutil.RandomBytes(3<<20+777, 11)
	res := uploadAll(t, c, data)[0]
	plan, err := c.Reconstruct(context.Background(), res.FileHash, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Chunk boundaries from the plan's first term would need the xorb; use sizes of the terms and
	// a few chunk-ish offsets.
	var cuts []uint64
	var pos uint64
	for _, tm := range plan.Terms {
		cuts = append(cuts, pos)
		pos += uint64(tm.UnpackedLength)
	}
	n := uint64(len(data))
	ranges := []casapi.ByteRange{{Start: 0, End: 0}, {Start: 0, End: n - 1}, {Start: n - 1, End: n - 1},
		{Start: 65535, End: 65536}, {Start: 131072, End: 1 << 20}, {Start: 1<<20 + 1, End: n + 5000}}
	for _, cut := range cuts {
		if cut > 0 {
			ranges = append(ranges, casapi.ByteRange{Start: cut - 1, End: cut}, casapi.ByteRange{Start: cut, End: min(cut+200000, n-1)})
		}
	}
	for _, rg := range ranges {
		got := fetchFile(t, c, res, &rg)
		end := min(rg.End, n-1)
		if !bytes.Equal(got, data[rg.Start:end+1]) {
			t.Fatalf("range %d-%d: got %d bytes that differ", rg.Start, rg.End, len(got))
		}
	}
	// Past the end: a clear error, no file.
	p := filepath.Join(t.TempDir(), "past")
	err = download.Download(context.Background(), download.Config{CAS: c}, download.Request{
		File: res.FileHash, Range: &casapi.ByteRange{Start: n, End: n + 10}, Size: -1, Path: p})
	if !errors.Is(err, cas.ErrRangeNotSatisfiable) {
		t.Fatalf("range past the end: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatal("a failed download left a file")
	}
}
