package download_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// tinyChunksCAS answers any reconstruction with its plan and serves one xorb body.
type tinyChunksCAS struct {
	cas.Client
	plan    *casapi.ReconstructionV2
	body    []byte
	fetches atomic.Int64
}

func (c *tinyChunksCAS) Reconstruct(context.Context, hash.Hash, *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	p := *c.plan
	return &p, nil
}

func (c *tinyChunksCAS) Fetch(_ context.Context, _ hash.Hash, _ casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	c.fetches.Add(1)
	return io.NopCloser(bytes.NewReader(c.body[r.Start : r.End+1])), nil
}

func (c *tinyChunksCAS) XorbFooter(context.Context, hash.Hash, casapi.XorbFetch) (*xorb.Footer, error) {
	return nil, cas.ErrNoFooter
}

// A hostile server's plan whose 200 terms all name one range of a xorb of 8192 chunks of one byte
// (each term within the per-term checks: no more chunks than bytes) is refused before anything is
// fetched or sized by it. Before, the download allocated an entry per chunk of every term and
// wrote each byte with a call of its own: 64 MiB and 3 s for this plan of 26 KB, 627 MiB and 30 s
// at 2,000 terms, before the file hash could fail.
func TestPlanOfOneByteChunksIsRefused(t *testing.T) {
	const n, terms = xorb.MaxChunks, 200
	var body []byte
	for i := range n { // a record header (version 0, 1 byte stored, uncompressed, 1 byte raw) and its byte
		body = append(body, 0, 1, 0, 0, 0, 1, 0, 0, byte(i))
	}
	x := hash.Hash{1}
	p := &casapi.ReconstructionV2{Xorbs: map[hash.Hash][]casapi.XorbFetch{x: {{URL: "https://cas.example/x",
		Ranges: []casapi.XorbRange{{Chunks: casapi.ChunkRange{Start: 0, End: n}, Bytes: casapi.ByteRange{Start: 0, End: uint64(len(body) - 1)}}}}}}}
	for range terms {
		p.Terms = append(p.Terms, casapi.Term{Hash: x, UnpackedLength: n, Range: casapi.ChunkRange{Start: 0, End: n}})
	}
	c := &tinyChunksCAS{plan: p, body: body}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := download.Download(context.Background(), download.Config{CAS: c, Concurrency: 4},
		download.Request{File: hash.Hash{2}, Size: terms * n, Path: filepath.Join(t.TempDir(), "out"), PrivatePath: true, NoSync: true})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "chunks for") {
		t.Fatalf("a plan of %d one-byte chunks: %v, want it refused for its chunks", terms*n, err)
	}
	if c.fetches.Load() != 0 {
		t.Errorf("%d fetches for a plan refused", c.fetches.Load())
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("refusing the plan allocated %d MiB", grew>>20)
	}
}
