package xetlog

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// fakeSource is a remote: plans by oid (oids without one are missing, or plain LFS objects when
// listed in lfs); it counts what it is asked, and holds the first jobs plan requests until that
// many are in flight.
type fakeSource struct {
	t     *testing.T
	plans map[string][]casapi.Term
	lfs   map[string]bool
	fail  map[string]error
	jobs  int

	mu                sync.Mutex
	locates, sizeAsks int
	planAsks          map[hash.Hash]int
	inFlight, most    int
	gate              chan struct{}
	opened            bool
}

func (f *fakeSource) Locate(ctx context.Context, objs []lfsbatch.Object) ([]client.Located, error) {
	f.mu.Lock()
	f.locates++
	f.mu.Unlock()
	out := make([]client.Located, len(objs))
	for i, o := range objs {
		switch {
		case f.plans[o.OID] != nil:
			out[i] = client.Located{State: client.InXet, File: fileOf(o.OID), Where: "cas"}
		case f.lfs[o.OID]:
			out[i] = client.Located{State: client.PlainLFS}
		default:
			out[i] = client.Located{State: client.Missing}
		}
	}
	return out, nil
}

func (f *fakeSource) Plan(ctx context.Context, l client.Located) (*casapi.ReconstructionV2, error) {
	f.mu.Lock()
	f.planAsks[l.File]++
	f.inFlight++
	f.most = max(f.most, f.inFlight)
	if f.inFlight == f.jobs && !f.opened {
		f.opened = true
		close(f.gate)
	}
	f.mu.Unlock()
	select {
	case <-f.gate:
	case <-time.After(10 * time.Second):
		f.t.Errorf("the plan requests never reached %d in flight", f.jobs)
	}
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
	for oid, terms := range f.plans {
		if l.File == fileOf(oid) {
			if err := f.fail[oid]; err != nil {
				return nil, err
			}
			return &casapi.ReconstructionV2{Terms: terms}, nil
		}
	}
	return nil, errors.New("no such file")
}

func (f *fakeSource) ChunkSizes(ctx context.Context, l client.Located, xorbs []hash.Hash) (map[hash.Hash][]uint32, error) {
	f.mu.Lock()
	f.sizeAsks++
	f.mu.Unlock()
	return map[hash.Hash][]uint32{xA: sizesOf(xA, 64)}, nil
}

// fileOf is the fake Xet file hash of an oid.
func fileOf(oid string) hash.Hash {
	h, _ := hash.ParseSHA256(oid)
	return h
}

func sizeOf(terms []casapi.Term) int64 {
	n := int64(0)
	for _, t := range terms {
		n += int64(t.UnpackedLength)
	}
	return n
}

// Run over a history: each version measured against the one before from plans asked once per
// file, at most Jobs at a time; objects the remote lacks or keeps outside Xet, and plans that
// fail, are rows of their own; a file renamed as it changed is measured against the deleted path
// it shares chunks with.
func TestRun(t *testing.T) {
	r := newGitRepo(t)
	v1 := []casapi.Term{term(xA, 0, 20)}
	v2 := []casapi.Term{term(xA, 0, 8), term(xB, 0, 3), term(xA, 12, 20)}
	v3 := []casapi.Term{term(xA, 0, 8), term(xB, 0, 3), term(xA, 12, 16), term(xB, 3, 5)}
	wrong := []casapi.Term{term(xA, 0, 4)} // a plan that does not add up to its pointer's size
	src := &fakeSource{t: t, jobs: 2, gate: make(chan struct{}), planAsks: map[hash.Hash]int{},
		plans: map[string][]casapi.Term{oidN(1): v1, oidN(2): v2, oidN(3): v3, oidN(5): wrong, oidN(6): v1,
			oidN(10): v2, oidN(11): v3, oidN(12): {term(xB, 40, 45)}, oidN(13): {term(xB, 50, 52)}},
		lfs: map[string]bool{oidN(4): true}, fail: map[string]error{oidN(6): errors.New("503 from the CAS")}}
	for i, v := range [][]casapi.Term{v1, v2, v3} {
		r.write("model.bin", pointerOf(i+1, sizeOf(v)))
		r.write("copy.bin", pointerOf(i+1, sizeOf(v))) // the same file at a second path: planned once
		if i == 1 {
			r.write("old.bin", pointerOf(4, 1000))   // plain LFS
			r.write("new.bin", pointerOf(9, 1000))   // not on the remote
			r.write("bad.bin", pointerOf(5, 999))    // a plan that does not fit
			r.write("down.bin", pointerOf(6, 1<<20)) // a plan the CAS fails
		}
		if i == 2 {
			r.write("ckpt-a.bin", pointerOf(10, sizeOf(v2)))
			r.write("gone.bin", pointerOf(13, bytesOf(xB, 50, 52)))
		}
		r.commit("v")
	}
	// Checkpoints renamed as they change: git sees a deletion and an addition.
	r.git("rm", "-q", "ckpt-a.bin", "gone.bin")
	r.write("ckpt-b.bin", pointerOf(11, sizeOf(v3)))
	r.write("fresh.bin", pointerOf(12, bytesOf(xB, 40, 45)))
	r.commit("renamed checkpoint")
	recs, err := Run(context.Background(), Options{Git: gitrepo.Git{Dir: r.dir}, Source: src, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string][]Record{}
	for _, rec := range recs {
		byPath[rec.Path] = append(byPath[rec.Path], rec)
	}
	m := byPath["model.bin"]
	if len(m) != 3 || len(byPath["copy.bin"]) != 3 {
		t.Fatalf("%d and %d records of model.bin and copy.bin, want 3 each:\n%+v", len(m), len(byPath["copy.bin"]), recs)
	}
	wantV3 := Saving{Shared: bytesOf(xA, 0, 8) + bytesOf(xB, 0, 3) + bytesOf(xA, 12, 16), New: bytesOf(xB, 3, 5), Exact: true}
	wantV2 := Saving{Shared: bytesOf(xA, 0, 8) + bytesOf(xA, 12, 20), New: bytesOf(xB, 0, 3), Exact: true}
	wantV1 := Saving{New: bytesOf(xA, 0, 20), Exact: true}
	for i, want := range []Saving{wantV3, wantV2, wantV1} {
		got := m[i]
		if got.State != "xet" || *got.Shared != want.Shared || *got.New != want.New || got.Exact != want.Exact {
			t.Errorf("model.bin version %d: %+v shared %d new %d, want %+v", 3-i, got, *got.Shared, *got.New, want)
		}
		if saved := 1 - float64(want.New)/float64(got.Size); *got.Saved != saved {
			t.Errorf("model.bin version %d: saved %v, want %v", 3-i, *got.Saved, saved)
		}
	}
	for path, want := range map[string]string{"old.bin": "lfs", "new.bin": "missing", "bad.bin": "error", "down.bin": "error"} {
		got := byPath[path]
		if len(got) != 1 || got[0].State != want || got[0].Shared != nil {
			t.Errorf("%s: %+v, want one record in state %s without byte counts", path, got, want)
		}
	}
	if e := byPath["down.bin"][0].Error; !strings.Contains(e, "503 from the CAS") {
		t.Errorf("down.bin's error %q does not say what the CAS answered", e)
	}
	if b := byPath["ckpt-b.bin"]; len(b) != 1 || !b[0].PrevByContent || b[0].PrevPath != "ckpt-a.bin" || *b[0].Shared != wantV3.Shared || *b[0].New != wantV3.New {
		t.Errorf("ckpt-b.bin, added as ckpt-a.bin was deleted: %+v, want ckpt-a.bin as its previous version (by content), shared %d", b, wantV3.Shared)
	}
	if f := byPath["fresh.bin"]; len(f) != 1 || f[0].PrevOid != "" || *f[0].Shared != 0 {
		t.Errorf("fresh.bin, sharing nothing with the deleted gone.bin: %+v, want no previous version", f)
	}
	if len(byPath["gone.bin"]) != 1 || len(byPath["ckpt-a.bin"]) != 1 {
		t.Errorf("deleted paths are listed: %+v %+v", byPath["gone.bin"], byPath["ckpt-a.bin"])
	}
	if src.locates != 1 || src.sizeAsks != 1 {
		t.Errorf("%d Locate and %d ChunkSizes calls, want one each", src.locates, src.sizeAsks)
	}
	for f, n := range src.planAsks {
		if n != 1 {
			t.Errorf("file %s planned %d times, want once", f, n)
		}
	}
	if len(src.planAsks) != 9 || src.most != 2 {
		t.Errorf("%d files planned, at most %d at a time; want 9, at most Jobs = 2", len(src.planAsks), src.most)
	}
}
