package download_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// planFixture is a store holding a file of two terms in two xorbs, and its real plans.
type planFixture struct {
	local  *embedded.CAS
	data   []byte
	file   hash.Hash
	sha    [32]byte
	whole  *casapi.ReconstructionV2
	ranged *casapi.ReconstructionV2 // plan of fixRange
}

var fixRange = casapi.ByteRange{Start: 70000, End: 400000}

func pseudoRandom(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x91a))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32() >> 7)
	}
	return b
}

func newPlanFixture(tb testing.TB) *planFixture {
	tb.Helper()
	st, err := store.Open(tb.TempDir(), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	local := embedded.New(st, "")
	ctx := context.Background()
	put := func(b []byte) *upload.FileResult {
		s := upload.NewSession(upload.Config{CAS: local, GlobalDedupe: true})
		r, err := s.Upload(ctx, bytes.NewReader(b), nil, nil)
		if err != nil {
			tb.Fatal(err)
		}
		if err := s.Finish(ctx); err != nil {
			tb.Fatal(err)
		}
		return r
	}
	first := pseudoRandom(300<<10, 1)
	put(first)
	// The file: the first file's first 200 KiB (stored, one term) then new data (another xorb).
	data := append(append([]byte(nil), first[:200<<10]...), pseudoRandom(400<<10, 2)...)
	r := put(data)
	whole, err := local.Reconstruct(ctx, r.FileHash, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if len(whole.Terms) < 2 || len(whole.Xorbs) < 2 {
		tb.Fatalf("fixture: %d terms in %d xorbs, want 2 in 2", len(whole.Terms), len(whole.Xorbs))
	}
	rng := fixRange
	ranged, err := local.Reconstruct(ctx, r.FileHash, &rng)
	if err != nil {
		tb.Fatal(err)
	}
	return &planFixture{local: local, data: data, file: r.FileHash, sha: sha256.Sum256(data), whole: whole, ranged: ranged}
}

// clonePlan deep-copies a plan.
func clonePlan(tb testing.TB, p *casapi.ReconstructionV2) *casapi.ReconstructionV2 {
	tb.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		tb.Fatal(err)
	}
	var out casapi.ReconstructionV2
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatal(err)
	}
	return &out
}

// planCAS serves a given plan (whatever is asked) and the store's xorb bytes.
type planCAS struct {
	*embedded.CAS
	plan    []byte // JSON of the plan
	fetches atomic.Int64
}

func (c *planCAS) Reconstruct(ctx context.Context, file hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	var p casapi.ReconstructionV2
	if err := json.Unmarshal(c.plan, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

func (c *planCAS) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	c.fetches.Add(1)
	return c.CAS.Fetch(ctx, x, f, r)
}

// getWithPlan downloads the fixture's file (or rng of it) through plan p; it returns the bytes
// written, or the error. withSHA: the request carries the SHA-256 and size (as git-lfs gives them);
// otherwise only the Xet file hash can catch a wrong plan. A failed download must leave nothing in
// its directory, and no download may take long.
func getWithPlan(tb testing.TB, fx *planFixture, p []byte, rng *casapi.ByteRange, withSHA bool) ([]byte, error) {
	tb.Helper()
	dir := tb.TempDir()
	path := filepath.Join(dir, "out.bin")
	req := download.Request{File: fx.file, Size: -1, Path: path, Range: rng}
	if withSHA {
		req.SHA256, req.Size = &fx.sha, int64(len(fx.data))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err := download.Download(ctx, download.Config{CAS: &planCAS{CAS: fx.local, plan: p}, Concurrency: 2}, req)
	if took := time.Since(start); took > 10*time.Second {
		tb.Fatalf("download through a hostile plan took %v (err %v)", took, err)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			tb.Fatalf("download through a hostile plan hung: %v", err)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			tb.Fatalf("a failed download left %s behind (%v)", left[0].Name(), err)
		}
		return nil, err
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil {
		tb.Fatal(rerr)
	}
	return b, nil
}

func mustJSON(tb testing.TB, p *casapi.ReconstructionV2) []byte {
	tb.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// hostilePlans are plans of the fixture's file made wrong in one way each.
func hostilePlans(tb testing.TB, fx *planFixture) map[string]*casapi.ReconstructionV2 {
	out := make(map[string]*casapi.ReconstructionV2)
	mut := func(name string, f func(p *casapi.ReconstructionV2)) {
		p := clonePlan(tb, fx.whole)
		f(p)
		out[name] = p
	}
	t0 := func(p *casapi.ReconstructionV2) *casapi.Term { return &p.Terms[0] }
	r0 := func(p *casapi.ReconstructionV2) *casapi.XorbRange { return &p.Xorbs[p.Terms[0].Hash][0].Ranges[0] }
	mut("term xorb has no fetch info", func(p *casapi.ReconstructionV2) { delete(p.Xorbs, p.Terms[0].Hash) })
	mut("term of a xorb the CAS lacks", func(p *casapi.ReconstructionV2) {
		var missing hash.Hash
		missing[0] = 0xAB
		p.Xorbs[missing] = p.Xorbs[p.Terms[0].Hash]
		p.Terms[0].Hash = missing
	})
	mut("reversed chunk range", func(p *casapi.ReconstructionV2) {
		t0(p).Range.Start, t0(p).Range.End = t0(p).Range.End, t0(p).Range.Start
	})
	mut("empty chunk range", func(p *casapi.ReconstructionV2) { t0(p).Range.End = t0(p).Range.Start })
	mut("fetch bytes reversed", func(p *casapi.ReconstructionV2) {
		r0(p).Bytes.Start, r0(p).Bytes.End = r0(p).Bytes.End, r0(p).Bytes.Start
	})
	mut("fetch bytes absurd", func(p *casapi.ReconstructionV2) { r0(p).Bytes.End = 1 << 62 })
	mut("fetch bytes start inside a record", func(p *casapi.ReconstructionV2) { r0(p).Bytes.Start++ })
	mut("fetch bytes cut short", func(p *casapi.ReconstructionV2) { r0(p).Bytes.End -= 10 })
	mut("fetch range does not cover the term", func(p *casapi.ReconstructionV2) { r0(p).Chunks.End = t0(p).Range.End - 1 })
	mut("chunk range past the xorb", func(p *casapi.ReconstructionV2) {
		t0(p).Range.End += 3
		r0(p).Chunks.End += 3
	})
	mut("offset beyond the first term", func(p *casapi.ReconstructionV2) {
		p.OffsetIntoFirstRange = uint64(t0(p).UnpackedLength) + 5
	})
	mut("unpacked length one more", func(p *casapi.ReconstructionV2) { t0(p).UnpackedLength++ })
	mut("unpacked length one less", func(p *casapi.ReconstructionV2) { t0(p).UnpackedLength-- })
	mut("unpacked length zero", func(p *casapi.ReconstructionV2) { t0(p).UnpackedLength = 0 })
	mut("unpacked length absurd", func(p *casapi.ReconstructionV2) { t0(p).UnpackedLength = 1<<32 - 1 })
	mut("term repeated", func(p *casapi.ReconstructionV2) { p.Terms = append(p.Terms, p.Terms[0]) })
	mut("terms swapped", func(p *casapi.ReconstructionV2) { p.Terms[0], p.Terms[1] = p.Terms[1], p.Terms[0] })
	mut("last term dropped", func(p *casapi.ReconstructionV2) { p.Terms = p.Terms[:len(p.Terms)-1] })
	mut("no terms", func(p *casapi.ReconstructionV2) { p.Terms = nil })
	mut("no fetch infos", func(p *casapi.ReconstructionV2) { p.Xorbs = nil })
	mut("fetch without ranges", func(p *casapi.ReconstructionV2) { p.Xorbs[p.Terms[0].Hash][0].Ranges = nil })
	return out
}

// A hostile or wrong plan fails the download with an error: no panic, no hang, no file left, no
// wrong data handed over. The real plan, as a control, succeeds.
func TestHostilePlansFail(t *testing.T) {
	fx := newPlanFixture(t)
	got, err := getWithPlan(t, fx, mustJSON(t, fx.whole), nil, true)
	if err != nil || !bytes.Equal(got, fx.data) {
		t.Fatalf("control: the real plan failed: %v", err)
	}
	rng := fixRange
	got, err = getWithPlan(t, fx, mustJSON(t, fx.ranged), &rng, false)
	if err != nil || !bytes.Equal(got, fx.data[rng.Start:rng.End+1]) {
		t.Fatalf("control: the real ranged plan failed: %v", err)
	}
	for name, p := range hostilePlans(t, fx) {
		t.Run(name, func(t *testing.T) {
			for _, withSHA := range []bool{true, false} {
				if _, err := getWithPlan(t, fx, mustJSON(t, p), nil, withSHA); err == nil {
					t.Fatalf("the download through this plan succeeded (SHA-256 and size given: %v)", withSHA)
				}
			}
		})
	}
	// Ranged: an offset past the first term.
	p := clonePlan(t, fx.ranged)
	p.OffsetIntoFirstRange = uint64(p.Terms[0].UnpackedLength)
	if _, err := getWithPlan(t, fx, mustJSON(t, p), &rng, false); err == nil {
		t.Fatal("a ranged plan whose offset is past its first term was accepted")
	}
}

// A plan claiming a huge chunk range for a tiny term must be rejected before anything is sized by
// that claim: a hostile server must not make the client allocate gigabytes.
func TestHostilePlanChunkCountIsBounded(t *testing.T) {
	fx := newPlanFixture(t)
	x := fx.whole.Terms[0].Hash
	const claimed = 16_000_000 // 16M chunks in a 100-byte term; 40 bytes each would be 640 MB
	p := &casapi.ReconstructionV2{
		Terms: []casapi.Term{{Hash: x, UnpackedLength: 100, Range: casapi.ChunkRange{Start: 0, End: claimed}}},
		Xorbs: map[hash.Hash][]casapi.XorbFetch{x: {{Ranges: []casapi.XorbRange{
			{Chunks: casapi.ChunkRange{Start: 0, End: claimed}, Bytes: casapi.ByteRange{Start: 0, End: 99}}}}}},
	}
	body := mustJSON(t, p)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := getWithPlan(t, fx, body, nil, false)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a term of 16M chunks in 100 bytes was accepted")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("a plan claiming %d chunks in a 100-byte term made the download allocate %d MB before failing (%v)",
			claimed, alloc>>20, err)
	}
}

// FuzzPlan downloads the fixture's file through fuzzed plans (v2 JSON as a CAS would send it):
// whole downloads succeed only with the right bytes, ranged ones never write more than asked, and
// none panics, hangs or leaves a file behind when it fails.
//
// Plans claiming more than 1M chunks in all are skipped: TestHostilePlanChunkCountIsBounded covers
// that case, which would otherwise let the fuzzer exhaust the machine's memory.
func FuzzPlan(f *testing.F) {
	fx := newPlanFixture(f)
	f.Add(mustJSON(f, fx.whole), false, uint64(0), uint64(0))
	f.Add(mustJSON(f, fx.whole), true, uint64(0), uint64(1)<<40)
	f.Add(mustJSON(f, fx.ranged), true, fixRange.Start, fixRange.End)
	for _, p := range hostilePlans(f, fx) {
		f.Add(mustJSON(f, p), false, uint64(0), uint64(0))
	}
	f.Fuzz(func(t *testing.T, plan []byte, ranged bool, start, end uint64) {
		var p casapi.ReconstructionV2
		if json.Unmarshal(plan, &p) != nil {
			return // JSON parsing is FuzzReconstructionV2's business (xet/cas)
		}
		var claimed uint64
		for _, tm := range p.Terms {
			if tm.Range.End > tm.Range.Start {
				claimed += uint64(tm.Range.End - tm.Range.Start)
			}
		}
		if claimed > 1<<20 {
			t.Skip("plan claims more chunks than this harness lets through")
		}
		var rng *casapi.ByteRange
		if ranged {
			rng = &casapi.ByteRange{Start: start, End: end}
		}
		// Without the SHA-256: only the Xet file hash guards whole downloads.
		got, err := getWithPlan(t, fx, plan, rng, false)
		if err != nil {
			return
		}
		if !ranged && !bytes.Equal(got, fx.data) {
			t.Fatalf("a whole download succeeded with %d wrong bytes", len(got))
		}
		if ranged && (end < start || uint64(len(got)) > end-start+1) {
			t.Fatalf("range %d-%d: wrote %d bytes", start, end, len(got))
		}
	})
}
