package upload_test

import (
	"bytes"
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
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
	data := testutil.RandomBytes(192<<20, 21)
	want, err := chunk.Summarize(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// settle collects twice: the first collection only moves sync.Pool contents to their victim
	// cache, which the second frees; one collection left pooled buffers in one side's count.
	settle := func(m *runtime.MemStats) {
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(m)
	}
	live := func(keep bool) (int64, []hash.Entry) {
		ctx := context.Background()
		var m0, m1 runtime.MemStats
		settle(&m0)
		s := upload.NewSession(upload.Config{CAS: embeddedtest.New(t), KeepEntries: keep, TempDir: t.TempDir()})
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
	// Whatever else the process allocates meanwhile only adds to a measure, so the least of three
	// alternating measures of each side is the one to compare (one CI run saw 167 KB of such noise).
	without, with := int64(math.MaxInt64), int64(math.MaxInt64)
	var got []hash.Entry
	for range 3 {
		n, _ := live(false)
		without = min(without, n)
		n, got = live(true)
		with = min(with, n)
	}
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
