package localshards

import (
	"os"
	"path/filepath"
	"testing"
)

// Small uploads' shards are merged: 1,000 one-file shards leave a handful of shard files of their
// xorb sections only (about 130 bytes per one-chunk upload, not the 330 of whole shards), every
// chunk is found at once by the adding process, and another process finds them all after the buffer
// is written (on Close, and whenever it reaches MergeOwnBytes).
func TestSmallOwnShardsAreMerged(t *testing.T) {
	dir := t.TempDir()
	const n, limit = 1000, 64 << 10
	c := openTest(t, dir, Options{Now: newClock(t0).Now, MergeOwnBytes: limit})
	for i := 0; i < n; i++ {
		s := testShard(uint64(1000+i), 1, 1)
		if err := c.AddOwn(s); err != nil {
			t.Fatal(err)
		}
		mustFind(t, c, s.Xorbs[0].Chunks[0].Hash, s.Xorbs[0].Hash, 0) // at once, in this process
	}
	written := len(shardFiles(t, c, ".mdb"))
	// Each one-chunk upload adds 96 bytes of xorb section: 1,000 of them pass 64 KiB once, so one
	// file is written before Close and the rest stays buffered.
	if written < 1 || written > 2 {
		t.Fatalf("%d shard files after %d small uploads, want 1 or 2 (merged at %d bytes)", written, n, limit)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	files := shardFiles(t, c, ".mdb")
	if len(files) != written+1 {
		t.Fatalf("%d shard files after Close, want %d (Close writes what is buffered)", len(files), written+1)
	}
	var total int64
	for _, f := range files {
		st, err := os.Stat(filepath.Join(c.Dir(), f))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	if per := total / n; per > 160 {
		t.Errorf("the cache holds %d bytes per one-chunk upload, want at most 160", per)
	}

	other := openTest(t, dir, Options{Now: newClock(t0).Now})
	for i := 0; i < n; i++ {
		s := testShard(uint64(1000+i), 1, 1)
		mustFind(t, other, s.Xorbs[0].Chunks[0].Hash, s.Xorbs[0].Hash, 0)
	}
	mustMiss(t, other, testShard(99999, 1, 1).Xorbs[0].Chunks[0].Hash)
}

// A shard past the merge cutoff is written at once, so a killed process never loses the cache
// entries of a large upload.
func TestLargeOwnShardIsWrittenAtOnce(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir, Options{Now: newClock(t0).Now, MergeOwnBytes: 64 << 10})
	if err := c.AddOwn(testShard(7, 2, 50)); err != nil { // ~5 KB of sections, over 64 KiB / 64
		t.Fatal(err)
	}
	if got := shardFiles(t, c, ".mdb"); len(got) != 1 {
		t.Fatalf("shard files %v, want the large shard written at once", got)
	}
	if err := c.AddOwn(testShard(8, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if got := shardFiles(t, c, ".mdb"); len(got) != 1 {
		t.Fatalf("shard files %v, want the small shard buffered", got)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := shardFiles(t, c, ".mdb"); len(got) != 2 {
		t.Fatalf("shard files %v after Flush, want 2", got)
	}
}
