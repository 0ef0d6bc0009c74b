package upload_test

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// keptEntries reads a file's chunks back from its result (Config.KeepEntries).
func keptEntries(t *testing.T, res *upload.FileResult) []hash.Entry {
	t.Helper()
	out := make([]hash.Entry, res.Entries.Len())
	if err := res.Entries.Read(out, 0); err != nil {
		t.Fatal(err)
	}
	return out
}

// The chunks a session keeps for its caller (Config.KeepEntries: the agent's local chunk index)
// are not held in memory per chunk: a 16 GiB file has about 260,000 chunks, and keeping their
// hashes and sizes in memory was most of what a large push's memory grew by. After the upload of
// a file of about 3,000 chunks, the live heap holds less than 48 KiB more than the same upload's
// without KeepEntries (in memory, the list was 120 KB); and the chunks read back are the file's.
func TestKeepEntriesHoldsNoMemoryPerChunk(t *testing.T) {
	if testing.Short() {
		t.Skip("a live-heap measure of a 192 MiB upload; runs without -short (the race step runs with it: the detector's own memory would be measured)")
	}
	data := testutil.RandomBytes(192<<20, 21)
	want, err := chunk.Summarize(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// settle reads the live heap once collections have nothing left to free: a collection only
	// moves sync.Pool contents to their victim cache and queues finalizers, whose objects (files
	// of earlier tests left to the collector) are freed by a later one. Each round waits for a
	// finalizer of its own, so the finalizers queued before it have had their turn.
	settle := func(m *runtime.MemStats) {
		for range 3 {
			ran := make(chan struct{})
			sentinel := new([64]byte)
			runtime.SetFinalizer(sentinel, func(*[64]byte) { close(ran) })
			sentinel = nil
			runtime.GC()
			<-ran
		}
		runtime.GC()
		runtime.ReadMemStats(m)
	}
	live := func(keep bool) (int64, []hash.Entry) {
		ctx := context.Background()
		var m0, m1 runtime.MemStats
		settle(&m0)
		// Each measure's store is closed before the next: a store left to the collector is freed
		// only once its files' finalizers have run, which may fall inside the next measure.
		st, err := store.Open(t.TempDir(), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s := upload.NewSession(upload.Config{CAS: embedded.New(st, ""), KeepEntries: keep, TempDir: t.TempDir()})
		defer s.Close()
		res, err := s.Upload(ctx, bytes.NewReader(data), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		settle(&m1)
		var got []hash.Entry
		if keep {
			got = keptEntries(t, res)
		}
		runtime.KeepAlive(res)
		runtime.KeepAlive(data) // live in both measures: freeing it in one would hide anything
		return int64(m1.HeapAlloc) - int64(m0.HeapAlloc), got
	}
	live(false) // warm the process-wide pools first
	// Stray allocations add to a measure and late frees take from it, in either side: the medians
	// of three alternating measures are compared (single measures saw ±200 KB in CI).
	var withs, withouts []int64
	var got []hash.Entry
	for range 3 {
		n, _ := live(false)
		withouts = append(withouts, n)
		n, got = live(true)
		withs = append(withs, n)
	}
	slices.Sort(withs)
	slices.Sort(withouts)
	with, without := withs[1], withouts[1]
	t.Logf("with %d without %d", with, without)
	if d := with - without; d > 48<<10 {
		t.Errorf("the session held %d bytes more with KeepEntries (%d chunks), want under %d", d, len(want.Chunks), 48<<10)
	}
	if len(got) != len(want.Chunks) {
		t.Fatalf("read back %d chunks, the file has %d", len(got), len(want.Chunks))
	}
	for i := range got {
		if got[i] != want.Chunks[i] {
			t.Fatalf("chunk %d read back as %v, want %v", i, got[i], want.Chunks[i])
		}
	}
}
