package localshards

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash/hashtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

func TestAddOwnThenLookup(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	c := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: -1})
	s := testShard(1, 3, 50)
	if err := c.AddOwn(s); err != nil {
		t.Fatal(err)
	}

	// Stored in the local form under its content hash, with a 3-week footer.
	names := shardFiles(t, c, ".mdb")
	if len(names) != 1 {
		t.Fatalf("shard files %v, want 1", names)
	}
	data, err := os.ReadFile(filepath.Join(c.Dir(), names[0]))
	if err != nil {
		t.Fatal(err)
	}
	if want := hash.Chunk(data).String() + ".mdb"; names[0] != want {
		t.Errorf("file name %s, want %s", names[0], want)
	}
	if filepath.Base(filepath.Dir(c.Dir())) != filepath.Base(dir) || filepath.Base(c.Dir()) != "shard-cache" {
		t.Errorf("shards in %s, want %s/shard-cache", c.Dir(), dir)
	}
	p, err := shard.Parse(data)
	if err != nil {
		t.Fatalf("stored shard does not parse: %v", err)
	}
	if p.Footer == nil || p.Footer.CreatedAt != uint64(t0.Unix()) || p.Footer.ExpiresAt != uint64(t0.Add(21*24*time.Hour).Unix()) {
		t.Fatalf("footer %+v, want created %d expires +3 weeks", p.Footer, t0.Unix())
	}
	if p.Footer.ChunkLookupNum != 150 || len(p.Files) != 1 {
		t.Errorf("stored shard has %d chunk lookups and %d files, want 150 and 1", p.Footer.ChunkLookupNum, len(p.Files))
	}

	for x, xb := range s.Xorbs {
		for i, ch := range xb.Chunks {
			m := mustFind(t, c, ch.Hash, xb.Hash, i)
			if len(m.Chunks) != len(xb.Chunks) || m.Chunks[len(m.Chunks)-1] != xb.Chunks[len(xb.Chunks)-1] {
				t.Fatalf("xorb %d: Match.Chunks differ from the xorb's chunks", x)
			}
		}
	}
	mustMiss(t, c, fakeChunk(2, 0))
	if got := c.Entries(); got != 150 {
		t.Errorf("Entries = %d, want 150", got)
	}

	// Once loaded, a new shard is indexed at once (no refresh needed).
	s2 := testShard(2, 1, 10)
	if err := c.AddOwn(s2); err != nil {
		t.Fatal(err)
	}
	mustFind(t, c, s2.Xorbs[0].Chunks[9].Hash, s2.Xorbs[0].Hash, 9)

	// Another cache on the same directory (another process, a later push) finds both.
	c2 := openTest(t, dir, Options{Now: clk.Now})
	mustFind(t, c2, s.Xorbs[2].Chunks[49].Hash, s.Xorbs[2].Hash, 49)
	mustFind(t, c2, s2.Xorbs[0].Chunks[0].Hash, s2.Xorbs[0].Hash, 0)
	if got := c2.Entries(); got != 160 {
		t.Errorf("reopened Entries = %d, want 160", got)
	}

	// Adding the same shard again stores nothing new.
	if err := c.AddOwn(s); err != nil {
		t.Fatal(err)
	}
	if n := len(shardFiles(t, c, ".mdb")); n != 2 {
		t.Errorf("%d shard files after re-adding, want 2", n)
	}
}

func TestReferenceDedupeShard(t *testing.T) {
	data := vectors.ReadFile(t, "ev-population.csv.shard.dedupe")
	ref := vectors.ReferenceChunks(t)
	if len(ref) != 796 {
		t.Fatalf("reference has %d chunks", len(ref))
	}
	xorb := hashtest.MustParse("eea25d6ee393ccae385820daed127b96ef0ea034dfb7cf6da3a950ce334b7632")
	created := time.Unix(1758663941, 0)
	clk := newClock(created.Add(time.Hour))
	dir := t.TempDir()
	c := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: -1})
	if err := c.Load(); err != nil { // loaded first: the answer is indexed incrementally
		t.Fatal(err)
	}
	if err := c.AddDedupe(data); err != nil {
		t.Fatal(err)
	}
	names := shardFiles(t, c, ".mdb")
	if len(names) != 1 || names[0] != hash.Chunk(data).String()+".mdb" {
		t.Fatalf("stored files %v", names)
	}
	stored, err := os.ReadFile(filepath.Join(c.Dir(), names[0]))
	if err != nil || !bytes.Equal(stored, data) {
		t.Fatalf("dedupe answer not stored byte for byte (err %v)", err)
	}

	check := func(c *Cache) {
		t.Helper()
		var key hash.Hash
		for i, rc := range ref {
			h := hashtest.MustParse(rc.Hash)
			m, ok, err := c.Lookup(h)
			if err != nil || !ok {
				t.Fatalf("chunk %d %s: ok %v err %v", i, rc.Hash, ok, err)
			}
			if m.Xorb != xorb || int(m.Index) != i {
				t.Fatalf("chunk %d: found in xorb %s at %d", i, m.Xorb, m.Index)
			}
			if m.Key.IsZero() || len(m.Chunks) != 796 || m.Chunks[i].Hash != hash.Keyed(m.Key, h) {
				t.Fatalf("chunk %d: key %s, %d chunks, keyed hash mismatch", i, m.Key, len(m.Chunks))
			}
			if m.Chunks[i].RawLen != uint32(rc.Size) {
				t.Fatalf("chunk %d: RawLen %d, want %d", i, m.Chunks[i].RawLen, rc.Size)
			}
			key = m.Key
		}
		if !strings.HasPrefix(key.String(), "12345678") {
			t.Errorf("key %s, want the reference key 12345678…", key)
		}
	}
	check(c)
	check(openTest(t, dir, Options{Now: clk.Now})) // loaded from disk by a fresh cache

	// After the server's expiry the answer no longer matches, and a week later it is deleted.
	clk.Set(time.Unix(1760478341+1, 0))
	mustMiss(t, c, hashtest.MustParse(ref[0].Hash))
	clk.Set(time.Unix(1760478341, 0).Add(ExpiredGrace + time.Second))
	c3 := openTest(t, dir, Options{Now: clk.Now})
	mustMiss(t, c3, hashtest.MustParse(ref[0].Hash))
	if n := shardFiles(t, c3, ".mdb"); len(n) != 0 {
		t.Errorf("expired answer still on disk a week later: %v", n)
	}
	// An answer that arrives expired is not stored.
	if err := c3.AddDedupe(data); err != nil {
		t.Fatal(err)
	}
	if n := shardFiles(t, c3, ".mdb"); len(n) != 0 {
		t.Errorf("expired answer stored: %v", n)
	}
}

// keyedShard returns a synthetic global-dedupe answer (keyed chunk hashes, key in the footer).
func keyedShard(t *testing.T, seed uint64, key hash.Hash, expires time.Time) ([]byte, *shard.Shard) {
	t.Helper()
	plain := testShard(seed, 1, 20)
	ks := &shard.Shard{Version: shard.HeaderVersion, Xorbs: []shard.Xorb{plain.Xorbs[0]}}
	ks.Xorbs[0].Chunks = append([]shard.XorbChunk(nil), plain.Xorbs[0].Chunks...)
	for i := range ks.Xorbs[0].Chunks {
		ks.Xorbs[0].Chunks[i].Hash = hash.Keyed(key, ks.Xorbs[0].Chunks[i].Hash)
	}
	data := ks.AppendLocal(nil, uint64(t0.Unix()), uint64(expires.Unix()))
	copy(data[len(data)-shard.FooterSize+72:], key[:]) // the footer's chunk_hash_hmac_key
	if p, err := shard.Parse(data); err != nil || !p.Keyed() {
		t.Fatalf("synthetic keyed shard: %v", err)
	}
	return data, plain
}

func TestKeyedShardsWithSeveralKeys(t *testing.T) {
	clk := newClock(t0)
	c := openTest(t, t.TempDir(), Options{Now: clk.Now, RefreshInterval: -1})
	k1, k2 := fakeChunk(100, 1), fakeChunk(100, 2)
	d1, p1 := keyedShard(t, 11, k1, t0.Add(time.Hour))
	d2, p2 := keyedShard(t, 12, k2, t0.Add(time.Hour))
	own := testShard(13, 1, 5)
	for _, d := range [][]byte{d1, d2} {
		if err := c.AddDedupe(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AddOwn(own); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		plain *shard.Shard
		key   hash.Hash
	}{{p1, k1}, {p2, k2}} {
		for i, ch := range tc.plain.Xorbs[0].Chunks {
			m, ok, err := c.Lookup(ch.Hash)
			if err != nil || !ok || m.Key != tc.key || int(m.Index) != i || m.Xorb != tc.plain.Xorbs[0].Hash {
				t.Fatalf("keyed chunk %d: ok %v err %v key %s index %d", i, ok, err, m.Key, m.Index)
			}
			if m.Chunks[i].Hash != hash.Keyed(tc.key, ch.Hash) {
				t.Fatalf("keyed chunk %d: Chunks hold %s", i, m.Chunks[i].Hash)
			}
		}
	}
	mustFind(t, c, own.Xorbs[0].Chunks[4].Hash, own.Xorbs[0].Hash, 4)
	// A keyed hash itself is not a chunk we have: it must not match as an unkeyed chunk.
	mustMiss(t, c, hash.Keyed(k1, p1.Xorbs[0].Chunks[0].Hash))
}

func TestExpiryOfOwnShards(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	c := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: -1})
	s := testShard(3, 1, 8)
	if err := c.AddOwn(s); err != nil {
		t.Fatal(err)
	}
	ch, xb := s.Xorbs[0].Chunks[3].Hash, s.Xorbs[0].Hash

	clk.Set(t0.Add(OwnShardLifetime)) // the last valid second
	mustFind(t, c, ch, xb, 3)
	clk.Set(t0.Add(OwnShardLifetime + time.Second))
	mustMiss(t, c, ch)

	// Expired but inside the grace week: ignored, kept on disk.
	clk.Set(t0.Add(OwnShardLifetime + ExpiredGrace - time.Second))
	c2 := openTest(t, dir, Options{Now: clk.Now})
	mustMiss(t, c2, ch)
	if n := len(shardFiles(t, c2, ".mdb")); n != 1 {
		t.Fatalf("%d files inside the grace week, want 1", n)
	}
	// A week past expiry: deleted on load.
	clk.Set(t0.Add(OwnShardLifetime + ExpiredGrace))
	c3 := openTest(t, dir, Options{Now: clk.Now})
	mustMiss(t, c3, ch)
	if n := len(shardFiles(t, c3, ".mdb")); n != 0 {
		t.Fatalf("%d files a week after expiry, want 0", n)
	}
}

func TestExpiryZeroMeansExpired(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir, Options{Now: newClock(t0).Now})
	data, plain := keyedShard(t, 21, fakeChunk(5, 5), t0.Add(time.Hour))
	binary.LittleEndian.PutUint64(data[len(data)-shard.FooterSize+112:], 0) // shard_key_expiry = 0
	if err := os.WriteFile(filepath.Join(c.Dir(), hash.Chunk(data).String()+".mdb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, c, plain.Xorbs[0].Chunks[0].Hash)
}

func TestSizeLimitPrunesOldestFirst(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	a := openTest(t, dir, Options{Now: clk.Now, SizeLimit: -1})
	var shards []*shard.Shard
	for i := 0; i < 3; i++ {
		// Created out of name order, so pruning must read the footers, not the names.
		clk.Set(t0.Add(time.Duration([]int{2, 0, 1}[i]) * time.Hour))
		s := testShard(uint64(40+i), 1, 30)
		if err := a.AddOwn(s); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, s)
	}
	names := shardFiles(t, a, ".mdb")
	st, err := os.Stat(filepath.Join(a.Dir(), names[0]))
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(3 * time.Hour))
	b := openTest(t, dir, Options{Now: clk.Now, SizeLimit: 2*st.Size() + st.Size()/2})
	if err := b.Load(); err != nil {
		t.Fatal(err)
	}
	if n := len(shardFiles(t, b, ".mdb")); n != 2 {
		t.Fatalf("%d files after pruning, want 2", n)
	}
	mustMiss(t, b, shards[1].Xorbs[0].Chunks[0].Hash) // created first: pruned
	mustFind(t, b, shards[0].Xorbs[0].Chunks[0].Hash, shards[0].Xorbs[0].Hash, 0)
	mustFind(t, b, shards[2].Xorbs[0].Chunks[29].Hash, shards[2].Xorbs[0].Hash, 29)
}

func TestCorruptFilesAreSetAside(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	var logs logbuf.Buffer
	c := openTest(t, dir, Options{Now: clk.Now, Log: zerolog.New(&logs), RefreshInterval: -1})
	good, bad := testShard(50, 2, 20), testShard(51, 1, 20)
	if err := c.AddOwn(good); err != nil {
		t.Fatal(err)
	}
	badData := bad.AppendLocal(nil, uint64(t0.Unix()), uint64(t0.Add(time.Hour).Unix()))
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(c.Dir(), name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	truncName := hash.Chunk(badData).String() + ".mdb"
	write(truncName, badData[:len(badData)-100])                         // truncated
	write(strings.Repeat("ab", 32)+".mdb", []byte("not a shard at all")) // garbage
	flipped := append([]byte(nil), badData...)
	bp, err := shard.Parse(badData)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(flipped[bp.Footer.XorbInfoOffset+36:], 1<<30) // absurd chunk count
	write(strings.Repeat("cd", 32)+".mdb", flipped)

	mustFind(t, c, good.Xorbs[1].Chunks[19].Hash, good.Xorbs[1].Hash, 19) // loads the index
	mustMiss(t, c, bad.Xorbs[0].Chunks[0].Hash)
	if got := shardFiles(t, c, ".mdb"); len(got) != 1 {
		t.Errorf("shard files left: %v, want only the good one", got)
	}
	if got := shardFiles(t, c, ".corrupt"); len(got) != 3 {
		t.Errorf("files set aside: %v, want 3", got)
	}
	if !strings.Contains(logs.String(), "malformed cached shard") || !strings.Contains(logs.String(), `"level":"warn"`) {
		t.Errorf("no warning logged: %s", logs.String())
	}

	// A file damaged after it was indexed: the hit is verified, fails, and is set aside; no error.
	goodName := shardFiles(t, c, ".mdb")[0]
	c2 := openTest(t, dir, Options{Now: clk.Now, Log: zerolog.New(&logs), RefreshInterval: -1})
	if err := c2.Load(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(c2.Dir(), goodName)
	gd, _ := os.ReadFile(p)
	if err := os.WriteFile(p, gd[:shard.HeaderSize+shard.EntrySize*10], 0o644); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, c2, good.Xorbs[1].Chunks[19].Hash)
	if _, err := os.Stat(p + ".corrupt"); err != nil {
		t.Errorf("damaged file not set aside: %v", err)
	}
}

func TestRoot(t *testing.T) {
	for _, tc := range []struct {
		xet, hf, xdg, home string
		want               string
	}{
		{"/x", "/h", "/d", "/u", "/x"},
		{"", "/h", "/d", "/u", "/h/xet"},
		{"", "", "/d", "/u", "/d/huggingface/xet"},
		{"", "", "", "/u", "/u/.cache/huggingface/xet"},
	} {
		got, err := Dirs{HFXetCache: tc.xet, HFHome: tc.hf, XDGCacheHome: tc.xdg, Home: tc.home}.Root()
		if err != nil || got != tc.want {
			t.Errorf("Root() with %+v = %q, %v; want %q", tc, got, err, tc.want)
		}
	}
	if _, err := (Dirs{}).Root(); err == nil {
		t.Error("a root without any directory")
	}
}

func TestEndpointDir(t *testing.T) {
	// The folder name given for the Hub's CAS in xet-core's docs/notes.
	if got := EndpointDir("/r", "https://cas-server.xethub.hf.co"); got != "/r/https___cas_serv-tGqkUaZf_CBPHQ6h" {
		t.Errorf("EndpointDir = %s", got)
	}
	if a, b := EndpointFolder("http://127.0.0.1:1"), EndpointFolder("http://127.0.0.1:2"); a == b || a[:17] != "http___127_0_0_1-" {
		t.Errorf("endpoint folders %s %s", a, b)
	}
	if got := EndpointFolder("ab"); !strings.HasPrefix(got, "ab-") || len(got) != 19 {
		t.Errorf("short endpoint folder %q", got)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"123": 123, "16GB": 16e9, "512 MiB": 512 << 20, "2tb": 2e12} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "GB", "1.5GB", "99999999999TB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
	c, err := Open(t.TempDir(), Options{})
	if err != nil || c.opts.SizeLimit != DefaultSizeLimit || c.opts.MaxEntries != DefaultMaxEntries {
		t.Fatalf("defaults: %v %+v", err, c)
	}
}

func TestConcurrentAddAndLookup(t *testing.T) {
	c := openTest(t, t.TempDir(), Options{Now: newClock(t0).Now, RefreshInterval: time.Millisecond})
	const writers, per = 4, 6
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				s := testShard(uint64(1000+w*per+i), 1, 40)
				if err := c.AddOwn(s); err != nil {
					errs <- err
					return
				}
				// Our own add is visible at once, whatever the others do.
				m, ok, err := c.Lookup(s.Xorbs[0].Chunks[39].Hash)
				if err != nil || !ok || m.Index != 39 {
					errs <- err
					return
				}
			}
		}(w)
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				if _, _, err := c.Lookup(fakeChunk(uint64(1000+i%(writers*per)), uint64(i%40))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent use failed: %v", err)
	}
	for i := 0; i < writers*per; i++ {
		if _, ok, _ := c.Lookup(fakeChunk(uint64(1000+i), 7)); !ok {
			t.Fatalf("shard %d lost", i)
		}
	}
}

func TestClosed(t *testing.T) {
	c := openTest(t, t.TempDir(), Options{})
	c.Close()
	if _, _, err := c.Lookup(hash.Zero); err != ErrClosed {
		t.Errorf("Lookup after Close: %v", err)
	}
	if err := c.AddOwn(testShard(1, 1, 1)); err != ErrClosed {
		t.Errorf("AddOwn after Close: %v", err)
	}
}

func TestRefreshSeesOtherWritersAndRemovals(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	reader := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: time.Millisecond})
	writer := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: -1})
	first := testShard(70, 1, 10)
	if err := writer.AddOwn(first); err != nil {
		t.Fatal(err)
	}
	mustFind(t, reader, first.Xorbs[0].Chunks[1].Hash, first.Xorbs[0].Hash, 1) // first load sees it

	second := testShard(71, 1, 10)
	if err := writer.AddOwn(second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // past the reader's refresh interval
	mustFind(t, reader, second.Xorbs[0].Chunks[9].Hash, second.Xorbs[0].Hash, 9)

	// A file another process deleted (pruned) stops answering after a refresh, without an error.
	data := first.AppendLocal(nil, uint64(t0.Unix()), uint64(t0.Add(OwnShardLifetime).Unix()))
	if err := os.Remove(filepath.Join(reader.Dir(), shardFileName(data))); err != nil {
		t.Fatal(err)
	}
	if err := reader.Refresh(); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, reader, first.Xorbs[0].Chunks[2].Hash)
	mustFind(t, reader, second.Xorbs[0].Chunks[0].Hash, second.Xorbs[0].Hash, 0)
}

func TestStaleTempFilesAreRemoved(t *testing.T) {
	c := openTest(t, t.TempDir(), Options{Now: newClock(t0).Now})
	old := filepath.Join(c.Dir(), ".deadbeef.mdb_temp")
	young := filepath.Join(c.Dir(), ".cafe.mdb_temp")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("stale temp file kept: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a writer's live temp file was removed: %v", err)
	}
}

func TestMaxEntriesIndexesNewestFirst(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	a := openTest(t, dir, Options{Now: clk.Now})
	var shards []*shard.Shard
	for i := 0; i < 3; i++ {
		clk.Set(t0.Add(time.Duration([]int{1, 0, 2}[i]) * time.Hour))
		s := testShard(uint64(80+i), 1, 30)
		if err := a.AddOwn(s); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, s)
	}
	// Room for two shards' entries (each xorb section bounds 30 chunks + header + bookend).
	b := openTest(t, dir, Options{Now: clk.Now, MaxEntries: 2*31 + 5})
	if err := b.Load(); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, b, shards[1].Xorbs[0].Chunks[0].Hash) // the oldest is not indexed...
	if err := b.Refresh(); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, b, shards[1].Xorbs[0].Chunks[0].Hash) // ...not even by a refresh...
	if n := len(shardFiles(t, b, ".mdb")); n != 3 {
		t.Errorf("%d files; the cap must not delete any", n) // ...but stays on disk
	}
	mustFind(t, b, shards[0].Xorbs[0].Chunks[3].Hash, shards[0].Xorbs[0].Hash, 3)
	mustFind(t, b, shards[2].Xorbs[0].Chunks[3].Hash, shards[2].Xorbs[0].Hash, 3)
	b.Close() // writes the snapshot, which remembers the left-out shard

	// The next load uses the snapshot and still leaves the oldest shard out (rather than taking it
	// for a new file and growing past the cap).
	c := openTest(t, dir, Options{Now: clk.Now, MaxEntries: 2*31 + 5})
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	if !c.fromSnapshot || c.Entries() != 60 {
		t.Fatalf("second load: from snapshot %v, %d entries; want true, 60", c.fromSnapshot, c.Entries())
	}
	mustMiss(t, c, shards[1].Xorbs[0].Chunks[0].Hash)
	mustFind(t, c, shards[2].Xorbs[0].Chunks[29].Hash, shards[2].Xorbs[0].Hash, 29)
}

// Forget removes the shards naming a xorb the CAS lacks, and this process stops answering hits.
func TestForget(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir, Options{})
	a, b := testShard(901, 1, 4), testShard(902, 1, 4)
	for _, s := range []*shard.Shard{a, b} {
		if err := c.AddOwn(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := c.Lookup(a.Xorbs[0].Chunks[0].Hash); !ok {
		t.Fatal("no hit before Forget")
	}
	n, err := c.Forget([]hash.Hash{a.Xorbs[0].Hash})
	if err != nil || n != 1 {
		t.Fatalf("Forget: %d shards, %v", n, err)
	}
	if _, ok, _ := c.Lookup(b.Xorbs[0].Chunks[0].Hash); ok {
		t.Fatal("a hit after Forget in the same process")
	}
	c2 := openTest(t, dir, Options{})
	if _, ok, _ := c2.Lookup(a.Xorbs[0].Chunks[0].Hash); ok {
		t.Fatal("a forgotten xorb is still found by a new process")
	}
	if _, ok, _ := c2.Lookup(b.Xorbs[0].Chunks[0].Hash); !ok {
		t.Fatal("another shard was forgotten too")
	}
}
