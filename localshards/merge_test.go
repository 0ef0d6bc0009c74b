package localshards

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// Small uploads' shards are merged: 2,000 one-chunk uploads leave a handful of singles files of 40
// bytes per upload (at most twice the 32-byte chunk hash they index; the same xorbs in shards took
// 124), every chunk is found at once by the adding process, and another process finds them all after
// the buffer is written (on Close, and whenever it reaches MergeOwnBytes).
func TestSmallOwnShardsAreMerged(t *testing.T) {
	dir := t.TempDir()
	const n, limit = 2000, 64 << 10
	c := openTest(t, dir, Options{Now: newClock(t0).Now, MergeOwnBytes: limit})
	watcher := openTest(t, dir, Options{Now: newClock(t0).Now, RefreshInterval: -1})
	mustMiss(t, watcher, testShard(99999, 1, 1).Xorbs[0].Chunks[0].Hash) // loaded before the writes
	for i := 0; i < n; i++ {
		s := testShard(uint64(1000+i), 1, 1)
		if err := c.AddOwn(s); err != nil {
			t.Fatal(err)
		}
		mustFind(t, c, s.Xorbs[0].Chunks[0].Hash, s.Xorbs[0].Hash, 0) // at once, in this process
	}
	written := len(shardFiles(t, c, singlesExt))
	// 2,000 uploads of 40 bytes pass 64 KiB once: one file is written before Close, the rest stays
	// buffered.
	if written != 1 {
		t.Fatalf("%d singles files after %d small uploads, want 1 (merged at %d bytes)", written, n, limit)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := shardFiles(t, c, shardExt); len(got) != 0 {
		t.Fatalf("shard files %v, want none: one-chunk uploads go to singles files", got)
	}
	files := shardFiles(t, c, singlesExt)
	if len(files) != written+1 {
		t.Fatalf("%d singles files after Close, want %d (Close writes what is buffered)", len(files), written+1)
	}
	var total int64
	for _, f := range files {
		st, err := os.Stat(filepath.Join(c.Dir(), f))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	if per := float64(total) / n; per > 2*32 {
		t.Errorf("the cache holds %.1f bytes per one-chunk upload, want at most 64 (2x its chunk hash)", per)
	}

	if err := watcher.Refresh(); err != nil { // a running process picks them up
		t.Fatal(err)
	}
	other := openTest(t, dir, Options{Now: newClock(t0).Now}) // a new one loads them
	for i := 0; i < n; i++ {
		s := testShard(uint64(1000+i), 1, 1)
		m := mustFind(t, other, s.Xorbs[0].Chunks[0].Hash, s.Xorbs[0].Hash, 0)
		if len(m.Chunks) != 1 || m.Chunks[0] != s.Xorbs[0].Chunks[0] {
			t.Fatalf("upload %d: chunks %+v, want %+v", i, m.Chunks, s.Xorbs[0].Chunks)
		}
		mustFind(t, watcher, s.Xorbs[0].Chunks[0].Hash, s.Xorbs[0].Hash, 0)
	}
	mustMiss(t, other, testShard(99999, 1, 1).Xorbs[0].Chunks[0].Hash)
}

// A buffer of one-chunk and larger small uploads is written as one singles file and one shard
// file, and both are found.
func TestMergedMixedUploads(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir, Options{Now: newClock(t0).Now, MergeOwnBytes: 4 << 20})
	one, three := testShard(11, 1, 1), testShard(12, 2, 3)
	for _, s := range []*shard.Shard{one, three} {
		if err := c.AddOwn(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if a, b := shardFiles(t, c, singlesExt), shardFiles(t, c, shardExt); len(a) != 1 || len(b) != 1 {
		t.Fatalf("singles %v, shards %v: want one of each", a, b)
	}
	other := openTest(t, dir, Options{Now: newClock(t0).Now})
	mustFind(t, other, one.Xorbs[0].Chunks[0].Hash, one.Xorbs[0].Hash, 0)
	for _, x := range three.Xorbs {
		mustFind(t, other, x.Chunks[2].Hash, x.Hash, 2)
	}
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
	if got := shardFiles(t, c, singlesExt); len(got) != 1 {
		t.Fatalf("singles files %v after Flush, want the small upload's", got)
	}
}
