package localshards

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// singlesOf writes n one-chunk uploads (seeds from seed) through a merging cache and closes it; it
// returns their shards and the singles file's path.
func singlesOf(t *testing.T, dir string, clk *clock, seed uint64, n int) ([]*shard.Shard, string) {
	t.Helper()
	c := openTest(t, dir, Options{Now: clk.Now, MergeOwnBytes: 4 << 20, RefreshInterval: -1})
	before := map[string]bool{}
	for _, f := range shardFiles(t, c, singlesExt) {
		before[f] = true
	}
	var ss []*shard.Shard
	for i := 0; i < n; i++ {
		s := testShard(seed+uint64(i), 1, 1)
		if err := c.AddOwn(s); err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range shardFiles(t, c, singlesExt) {
		if !before[f] {
			return ss, filepath.Join(c.Dir(), f)
		}
	}
	t.Fatal("no new singles file")
	return nil, ""
}

func firstChunk(s *shard.Shard) (hash.Hash, hash.Hash) {
	return s.Xorbs[0].Chunks[0].Hash, s.Xorbs[0].Hash
}

// A singles file damaged on disk is set aside at load (CRC, length) or at the hit that reads it
// (after it was indexed), never answered; other files still answer.
func TestDamagedSinglesFilesAreSetAside(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	good, _ := singlesOf(t, dir, clk, 100, 10)
	bad, badPath := singlesOf(t, dir, clk, 200, 10)
	_, cutPath := singlesOf(t, dir, clk, 300, 10)
	data, err := os.ReadFile(badPath)
	if err != nil {
		t.Fatal(err)
	}
	data[singlesHeadSize+5] ^= 1 // a hash byte: the CRC no longer matches
	if err := os.WriteFile(badPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cut, _ := os.ReadFile(cutPath)
	if err := os.WriteFile(cutPath, cut[:len(cut)-7], 0o644); err != nil {
		t.Fatal(err)
	}
	c := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: -1})
	ch, x := firstChunk(good[3])
	mustFind(t, c, ch, x, 0)
	ch, _ = firstChunk(bad[3])
	mustMiss(t, c, ch)
	if got := shardFiles(t, c, corruptExt); len(got) != 2 {
		t.Fatalf("set aside: %v, want the two damaged files", got)
	}

	// Damaged after it was indexed: the record read on a hit does not match, and the file goes.
	goodPath := filepath.Join(c.Dir(), shardFiles(t, c, singlesExt)[0])
	c2 := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: -1})
	if err := c2.Load(); err != nil {
		t.Fatal(err)
	}
	gd, _ := os.ReadFile(goodPath)
	for i := singlesHeadSize; i < len(gd)-4; i++ {
		gd[i] = 0
	}
	if err := os.WriteFile(goodPath, gd, 0o644); err != nil {
		t.Fatal(err)
	}
	ch, _ = firstChunk(good[5])
	mustMiss(t, c2, ch)
	if _, err := os.Stat(goodPath + corruptExt); err != nil {
		t.Errorf("file damaged after indexing not set aside: %v", err)
	}
}

// Singles files expire with our own shards' lifetime and are deleted a week later; Forget removes
// the one naming a xorb the CAS lacks.
func TestSinglesExpiryAndForget(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	a, _ := singlesOf(t, dir, clk, 400, 5)
	clk.Set(t0.Add(time.Hour))
	b, _ := singlesOf(t, dir, clk, 500, 5)

	c := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: -1})
	ch, x := firstChunk(a[2])
	mustFind(t, c, ch, x, 0)
	n, err := c.Forget([]hash.Hash{x})
	if err != nil || n != 1 {
		t.Fatalf("Forget: %d files, %v; want the one singles file naming the xorb", n, err)
	}
	c2 := openTest(t, dir, Options{Now: clk.Now})
	mustMiss(t, c2, ch)
	chb, xb := firstChunk(b[4])
	mustFind(t, c2, chb, xb, 0)

	clk.Set(t0.Add(time.Hour + OwnShardLifetime + time.Second))
	mustMiss(t, openTest(t, dir, Options{Now: clk.Now}), chb)
	if got := len(shardFiles(t, c2, singlesExt)); got != 1 {
		t.Fatalf("%d singles files inside the grace week, want 1", got)
	}
	clk.Set(t0.Add(time.Hour + OwnShardLifetime + ExpiredGrace))
	mustMiss(t, openTest(t, dir, Options{Now: clk.Now}), chb)
	if got := len(shardFiles(t, c2, singlesExt)); got != 0 {
		t.Fatalf("%d singles files a week past expiry, want 0", got)
	}
}

// The index snapshot holds the shards only: a process that loads from it scans the singles files
// and finds their chunks, and the snapshot grows by nothing for them.
func TestSinglesStayOutOfTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	ones, _ := singlesOf(t, dir, clk, 600, 50)
	big := testShard(700, 2, 10)
	w := openTest(t, dir, Options{Now: clk.Now})
	if err := w.AddOwn(big); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a := openTest(t, dir, Options{Now: clk.Now})
	if err := a.Load(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil { // waits for the snapshot
		t.Fatal(err)
	}
	snap, err := readSnapshot(filepath.Join(dir, ShardCacheSubdir, snapshotName))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.shards) != 1 || len(snap.xorbs) != 2 {
		t.Fatalf("snapshot of %d files and %d xorbs, want the one shard's 2 xorbs", len(snap.shards), len(snap.xorbs))
	}
	b := openTest(t, dir, Options{Now: clk.Now})
	ch, x := firstChunk(ones[42])
	mustFind(t, b, ch, x, 0)
	mustFind(t, b, big.Xorbs[1].Chunks[9].Hash, big.Xorbs[1].Hash, 9)
	if !b.fromSnapshot {
		t.Fatal("the second process did not load from the snapshot")
	}
}

// FuzzSingles feeds arbitrary bytes to the singles reader (parseSinglesHead + scanSingles +
// decodeSingle, what every load runs on a singles file). It must never panic or index past its
// arrays, and whatever it accepts must decode record by record to the keys it indexed. Seeds:
// testdata/fuzz/FuzzSingles.
func FuzzSingles(f *testing.F) {
	var xs []shard.Xorb
	for i := uint64(0); i < 3; i++ {
		xs = append(xs, testShard(800+i, 1, 1).Xorbs[0])
	}
	f.Add(marshalSingles(xs, 1, 2))
	f.Add(marshalSingles(nil, 0, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseSinglesHead(data, int64(len(data)))
		if err != nil {
			return
		}
		if m.xorbOff != singlesHeadSize || m.xorbEnd != int64(len(data)) || m.maxChunk < 0 {
			t.Fatalf("meta out of bounds: %+v", m)
		}
		keys := make([]uint64, m.maxChunk)
		refs := make([]uint32, m.maxChunk)
		n, xorbs, err := scanSingles(data[m.xorbOff:m.xorbEnd], m.xorbOff, 7, 0, keys, refs, nil)
		if err != nil {
			return
		}
		if n != m.maxChunk || len(xorbs) != n {
			t.Fatalf("scanned %d records (%d xorbs) of %d", n, len(xorbs), m.maxChunk)
		}
		for i, x := range xorbs {
			if x.base != 7+uint32(i) || x.n != 1 || refs[i] != x.base || keys[i] != x.hash.Truncate() {
				t.Fatalf("record %d: %+v inconsistent", i, x)
			}
			ch, err := decodeSingle(data[x.off:x.off+singleSize], x.hash)
			if err != nil {
				continue // a bad length is found when the record is read
			}
			if len(ch) != 1 || ch[0].Hash != x.hash || ch[0].RawLen == 0 {
				t.Fatalf("record %d decodes to %+v", i, ch)
			}
		}
	})
}

// Past maxSinglesFiles, a load merges the singles files that expire on the same day into one (the
// earliest expiry of the group), so later loads open few files; every chunk is still found, by
// this process and the next.
func TestSinglesFilesAreCompacted(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	var all []*shard.Shard
	for i := 0; i < maxSinglesFiles+6; i++ { // one day: t0 (noon) plus i minutes
		clk.Set(t0.Add(time.Duration(i) * time.Minute))
		ss, _ := singlesOf(t, dir, clk, uint64(10000+10*i), 3)
		all = append(all, ss...)
	}
	later := t0.Add(48 * time.Hour)
	for i := 0; i < 2; i++ { // another day
		clk.Set(later.Add(time.Duration(i) * time.Minute))
		ss, _ := singlesOf(t, dir, clk, uint64(20000+10*i), 3)
		all = append(all, ss...)
	}
	c := openTest(t, dir, Options{Now: clk.Now})
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	files := shardFiles(t, c, singlesExt)
	if len(files) != 2 {
		t.Fatalf("%d singles files after the load, want 2 (one per expiry day)", len(files))
	}
	var expiries []uint64
	for _, f := range files {
		m, err := c.readMeta(f)
		if err != nil {
			t.Fatal(err)
		}
		expiries = append(expiries, m.expires)
	}
	want := map[uint64]bool{uint64(t0.Add(OwnShardLifetime).Unix()): true, uint64(later.Add(OwnShardLifetime).Unix()): true}
	for _, e := range expiries {
		if !want[e] {
			t.Errorf("merged file expires at %d, want the earliest of its day: %v", e, want)
		}
	}
	next := openTest(t, dir, Options{Now: clk.Now})
	for _, s := range all {
		ch, x := firstChunk(s)
		mustFind(t, c, ch, x, 0)
		mustFind(t, next, ch, x, 0)
	}
}

// Several processes loading at once may compact the same files: each ends up finding every chunk
// (after a refresh, for the inputs another one removed under it), and the directory holds one
// merged file.
func TestSinglesCompactionRace(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	var all []*shard.Shard
	for i := 0; i < maxSinglesFiles+2; i++ {
		ss, _ := singlesOf(t, dir, clk, uint64(30000+10*i), 2)
		all = append(all, ss...)
	}
	caches := make([]*Cache, 4)
	errs := make(chan error, len(caches))
	for i := range caches {
		caches[i] = openTest(t, dir, Options{Now: clk.Now})
		go func(c *Cache) { errs <- c.Load() }(caches[i])
	}
	for range caches {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range caches {
		if err := c.Refresh(); err != nil {
			t.Fatal(err)
		}
		for _, s := range all {
			ch, x := firstChunk(s)
			mustFind(t, c, ch, x, 0)
		}
	}
	if files := shardFiles(t, caches[0], singlesExt); len(files) != 1 {
		t.Fatalf("singles files %v, want the one merged file", files)
	}
}
