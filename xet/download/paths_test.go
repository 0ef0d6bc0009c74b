package download_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/localshards"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// tensorBytes: float16-like values (BG4-LZ4 chunks); textBytes: repetitive text (LZ4 chunks).
func tensorBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 9))
	b := make([]byte, n&^1)
	for i := 0; i+2 <= len(b); i += 2 {
		v := uint16(r.Uint32())&0x83FF | uint16(12+r.IntN(4))<<10
		binary.LittleEndian.PutUint16(b[i:], v)
	}
	return b
}

func textBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 10))
	words := strings.Fields("the quick brown fox jumps over a lazy dog while xet chunks and hashes every byte")
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString(words[r.IntN(len(words))])
		sb.WriteByte(' ')
	}
	return []byte(sb.String()[:n])
}

// Compressed chunks (LZ4 and BG4-LZ4) are decoded into the write buffer: whole files and ranges
// that start and end inside chunks come back exact.
func TestRoundTripCompressed(t *testing.T) {
	c := embeddedtest.New(t)
	for name, data := range map[string][]byte{
		"tensor": tensorBytes(5<<20+3, 1),
		"text":   textBytes(4<<20+99, 2),
		"mixed":  append(append(textBytes(1<<20, 3), testutil.RandomBytes(2<<20, 4)...), tensorBytes(2<<20, 5)...),
	} {
		res := uploadAll(t, c, data)[0]
		if got := fetchFile(t, c, res, nil); !bytes.Equal(got, data) {
			t.Fatalf("%s: whole file differs", name)
		}
		n := uint64(len(data))
		for _, rg := range []casapi.ByteRange{{Start: 1, End: n - 2}, {Start: 70000, End: 70000}, {Start: 100003, End: 3<<20 + 5}} {
			got := fetchFile(t, c, res, &rg)
			if !bytes.Equal(got, data[rg.Start:rg.End+1]) {
				t.Fatalf("%s: range %d-%d differs", name, rg.Start, rg.End)
			}
		}
	}
}

// A wrong SHA-256 fails the download and leaves nothing at the path or beside it, whether the
// file is written under a temp name or in place (PrivatePath); a good one is written in place with
// no other file made.
func TestSHA256Mismatch(t *testing.T) {
	c := embeddedtest.New(t)
	data := testutil.RandomBytes(3<<20, 6)
	res := uploadAll(t, c, data)[0]
	for _, private := range []bool{false, true} {
		dir := t.TempDir()
		p := filepath.Join(dir, "out")
		bad := sha256.Sum256(data)
		bad[0] ^= 1
		err := download.Download(context.Background(), download.Config{CAS: c}, download.Request{
			File: res.FileHash, SHA256: &bad, Size: res.Size, Path: p, PrivatePath: private})
		if err == nil || !strings.Contains(err.Error(), "SHA-256 mismatch") {
			t.Fatalf("private %v: err = %v, want a SHA-256 mismatch", private, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("private %v: a failed download left %d files", private, len(ents))
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	good := sha256.Sum256(data)
	if err := download.Download(context.Background(), download.Config{CAS: c}, download.Request{
		File: res.FileHash, SHA256: &good, Size: res.Size, Path: p, PrivatePath: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("in-place download: %d bytes, %v", len(got), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("in-place download made %d files, want 1", len(ents))
	}
}

// A file of three xorbs: the session reuses xorb buffers (the in-process store releases them) and
// everything stored is intact; progress is reported in steps and ends at the size.
func TestMultiXorbBufferReuse(t *testing.T) {
	// Under -race it runs with -short as well (the race step): buffers reused across xorbs are
	// what the detector is there for.
	if testing.Short() && !raceEnabled {
		t.Skip("140 MiB round trip; runs without -short")
	}
	n := int64(140 << 20)
	c := embeddedtest.New(t)
	s := upload.NewSession(upload.Config{CAS: c})
	var last int64
	calls := 0
	res, err := s.Upload(context.Background(), newGen(n, 77, false), nil, func(d int64) { last = d; calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	if last != n || calls < 2 {
		t.Fatalf("upload progress: %d calls, last %d", calls, last)
	}
	h := sha256.New()
	if _, err := io.Copy(h, newGen(n, 77, false)); err != nil {
		t.Fatal(err)
	}
	if [32]byte(h.Sum(nil)) != res.SHA256 {
		t.Fatal("upload result has a wrong SHA-256")
	}
	p := filepath.Join(t.TempDir(), "out")
	var dl []int64
	err = download.Download(context.Background(), download.Config{CAS: c}, download.Request{
		File: res.FileHash, SHA256: &res.SHA256, Size: n, Path: p, Progress: func(d int64) { dl = append(dl, d) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) == 0 || dl[len(dl)-1] != n || len(dl) > int(n>>20)+1 {
		t.Fatalf("download progress: %d calls, last %v", len(dl), dl[len(dl)-1:])
	}
}

// The O_DIRECT output (the default on Linux) and the page-cache output give the same bytes, for
// whole files and ranges, uncompressed and compressed chunks, and a file whose chunks repeat; with
// several ranges in flight, the streaming SHA-256 reads back what was written ahead of it.
func TestDirectAndBufferedOutputAgree(t *testing.T) {
	c := embeddedtest.New(t)
	rep := testutil.RandomBytes(300<<10, 12)
	var repeated []byte
	for range 8 {
		repeated = append(repeated, rep...)
	}
	files := [][]byte{testutil.RandomBytes(5<<20+4095, 11), tensorBytes(3<<20+6, 13), textBytes(2<<20+4097, 14), repeated}
	results := uploadAll(t, c, files...)
	for i, res := range results {
		data := files[i]
		n := uint64(len(data))
		ranges := []*casapi.ByteRange{nil, {Start: 4095, End: n - 4097}, {Start: 4096, End: 4096 + 3*4096 - 1},
			{Start: 1, End: 2}, {Start: n / 3, End: n - 1}}
		for _, rg := range ranges {
			for _, mode := range []struct {
				buffered bool
				conc     int
			}{{false, 0}, {true, 0}, {false, 4}, {true, 3}} {
				buffered := mode.buffered
				p := filepath.Join(t.TempDir(), "out")
				sum := sha256.Sum256(data)
				req := download.Request{File: res.FileHash, Range: rg, Size: res.Size, Path: p}
				if rg == nil {
					req.SHA256 = &sum
				}
				if err := download.Download(context.Background(), download.Config{CAS: c, BufferedIO: buffered, Concurrency: mode.conc}, req); err != nil {
					t.Fatalf("file %d range %v buffered=%v: %v", i, rg, buffered, err)
				}
				got, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				want := data
				if rg != nil {
					want = data[rg.Start : rg.End+1]
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("file %d range %v buffered=%v: %d bytes that differ", i, rg, buffered, len(got))
				}
			}
		}
	}
}

// A file made of pieces stored in different xorbs is fetched as several ranges at once; with the
// SHA-256 verified, the ranges written ahead of the hash frontier are read back, and the digest is
// right either way.
func TestConcurrentRangesWithSHA256(t *testing.T) {
	c := embeddedtest.New(t)
	cache, err := localshards.Open(t.TempDir(), localshards.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	cfg := upload.Config{CAS: c, Cache: cache}
	a, b, d := testutil.RandomBytes(3<<20, 21), tensorBytes(2<<20, 22), textBytes(1<<20, 23)
	uploadWith(t, cfg, a)
	uploadWith(t, cfg, b)
	uploadWith(t, cfg, d)
	whole := append(append(append(append([]byte(nil), b...), a...), d...), b...)
	res := uploadWith(t, cfg, whole)[0]
	if res.DedupedBytes < int64(len(whole))/2 {
		t.Fatalf("only %d of %d bytes deduped: the file would not span several xorbs", res.DedupedBytes, len(whole))
	}
	plan, err := c.Reconstruct(context.Background(), res.FileHash, nil)
	if err != nil || len(plan.Xorbs) < 3 {
		t.Fatalf("plan uses %d xorbs (%v); want at least 3", len(plan.Xorbs), err)
	}
	for _, conc := range []int{1, 2, 4} {
		for _, buffered := range []bool{false, true} {
			p := filepath.Join(t.TempDir(), "out")
			sum := sha256.Sum256(whole)
			err := download.Download(context.Background(), download.Config{CAS: c, Concurrency: conc, BufferedIO: buffered},
				download.Request{File: res.FileHash, SHA256: &sum, Size: int64(len(whole)), Path: p})
			if err != nil {
				t.Fatalf("concurrency %d buffered=%v: %v", conc, buffered, err)
			}
			if got, _ := os.ReadFile(p); !bytes.Equal(got, whole) {
				t.Fatalf("concurrency %d buffered=%v: bytes differ", conc, buffered)
			}
		}
	}
}

// fetchCounter counts the fetches asked of a CAS.
type fetchCounter struct {
	cas.Client
	n atomic.Int64
}

func (c *fetchCounter) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	c.n.Add(1)
	return c.Client.Fetch(ctx, x, f, r)
}

// A file whose plan is not the size the request expects (a pointer's size, which a cloned
// repository chooses) is refused before anything is fetched or reserved on disk: a pointer of 1 TB
// reserves no terabyte, and a plan of a larger file is not downloaded to be thrown away.
func TestPlanSizeCheckedFirst(t *testing.T) {
	c := &fetchCounter{Client: embeddedtest.New(t)}
	data := testutil.RandomBytes(3<<20, 8)
	res := uploadAll(t, c.Client, data)[0]
	sum := sha256.Sum256(data)
	for _, size := range []int64{1 << 40, res.Size - 1} {
		dir := t.TempDir()
		err := download.Download(context.Background(), download.Config{CAS: c}, download.Request{
			File: res.FileHash, SHA256: &sum, Size: size, Path: filepath.Join(dir, "out")})
		if err == nil || !strings.Contains(err.Error(), strconv.FormatInt(size, 10)) {
			t.Fatalf("size %d: err = %v, want a size mismatch naming it", size, err)
		}
		if n := c.n.Load(); n != 0 {
			t.Errorf("size %d: %d fetches before the size was checked", size, n)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("size %d: a refused download left %d files", size, len(ents))
		}
	}
}
