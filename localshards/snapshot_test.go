package localshards

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// snapshotFixture fills a cache directory with n own shards, loads it once (which writes the index
// snapshot) and returns the shards.
func snapshotFixture(t *testing.T, dir string, n int) []*shard.Shard {
	t.Helper()
	clk := newClock(t0)
	a := openTest(t, dir, Options{Now: clk.Now})
	var shards []*shard.Shard
	for i := 0; i < n; i++ {
		s := testShard(uint64(300+i), 2, 25)
		if err := a.AddOwn(s); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, s)
	}
	if err := a.Load(); err != nil {
		t.Fatal(err)
	}
	if a.fromSnapshot {
		t.Fatal("first load used a snapshot that cannot exist yet")
	}
	a.Close() // waits for the snapshot writer
	if _, err := os.Stat(filepath.Join(a.Dir(), snapshotName)); err != nil {
		t.Fatalf("no index snapshot after a full build: %v", err)
	}
	return shards
}

func checkAll(t *testing.T, c *Cache, shards []*shard.Shard) {
	t.Helper()
	for _, s := range shards {
		for _, xb := range s.Xorbs {
			for i, ch := range xb.Chunks {
				mustFind(t, c, ch.Hash, xb.Hash, i)
			}
		}
	}
}

func TestSnapshotIsReusedAndExtended(t *testing.T) {
	dir := t.TempDir()
	shards := snapshotFixture(t, dir, 6)
	clk := newClock(t0)

	// A shard added after the snapshot is scanned on load beside it.
	w := openTest(t, dir, Options{Now: clk.Now})
	extra := testShard(399, 1, 10)
	if err := w.AddOwn(extra); err != nil {
		t.Fatal(err)
	}
	b := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: -1})
	if err := b.Load(); err != nil {
		t.Fatal(err)
	}
	if !b.fromSnapshot {
		t.Fatal("second load did not use the snapshot")
	}
	checkAll(t, b, append(shards, extra))
	mustMiss(t, b, fakeChunk(12345, 6))
	if got, want := b.Entries(), 6*50+10; got != want {
		t.Errorf("Entries = %d, want %d", got, want)
	}
}

func TestSnapshotWithRemovedShard(t *testing.T) {
	dir := t.TempDir()
	shards := snapshotFixture(t, dir, 6)
	c := openTest(t, dir, Options{Now: newClock(t0).Now, RefreshInterval: -1})
	// Remove one shard file behind the snapshot's back.
	data := shards[2].AppendLocal(nil, uint64(t0.Unix()), uint64(t0.Add(OwnShardLifetime).Unix()))
	name := filepath.Join(c.Dir(), shardFileName(data))
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	if !c.fromSnapshot {
		t.Fatal("did not use the snapshot")
	}
	mustMiss(t, c, shards[2].Xorbs[0].Chunks[0].Hash)
	checkAll(t, c, append(shards[:2:2], shards[3:]...))
}

func TestDamagedSnapshotIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	shards := snapshotFixture(t, dir, 4)
	p := filepath.Join(dir, ShardCacheSubdir, snapshotName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, damage := range []func([]byte) []byte{
		func(b []byte) []byte { b = append([]byte(nil), b...); b[len(b)/2] ^= 1; return b },
		func(b []byte) []byte { return b[:len(b)-5] },
		func(b []byte) []byte { return []byte("XGTIDX01 nonsense") },
	} {
		if err := os.WriteFile(p, damage(b), 0o644); err != nil {
			t.Fatal(err)
		}
		c := openTest(t, dir, Options{Now: newClock(t0).Now})
		if err := c.Load(); err != nil {
			t.Fatal(err)
		}
		if c.fromSnapshot {
			t.Fatal("used a damaged snapshot")
		}
		checkAll(t, c, shards)
		c.Close()
	}
}
