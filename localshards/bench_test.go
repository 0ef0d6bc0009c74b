package localshards

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// The benchmark cache: 2,000 own-upload shards (local form) of 2 xorbs × 4,000 chunks, 16 million
// chunk entries, about 1 GB. It is generated once under os.TempDir() and reused by later runs.
const (
	benchShards    = 2000
	benchXorbs     = 2
	benchPerXorb   = 4000
	benchChunks    = benchShards * benchXorbs * benchPerXorb
	benchVersion   = "v1"
	benchDoneFile  = "complete"
	benchSeedShift = 1 << 20
)

var benchDirOnce struct {
	sync.Once
	dir   string
	bytes int64
	err   error
}

func benchChunk(s, x, c int) hash.Hash {
	return fakeChunk(uint64(s*benchSeedShift+x), uint64(c))
}

// benchShard builds shard s of the benchmark cache without the (slow, irrelevant) merkle hashing.
func benchShard(s int) *shard.Shard {
	sh := &shard.Shard{Version: shard.HeaderVersion}
	var terms []shard.Term
	for x := 0; x < benchXorbs; x++ {
		xb := shard.Xorb{Hash: fakeChunk(uint64(s), uint64(1<<40+x)), BytesInXorb: benchPerXorb * 16000}
		xb.Chunks = make([]shard.XorbChunk, benchPerXorb)
		for c := range xb.Chunks {
			xb.Chunks[c] = shard.XorbChunk{Hash: benchChunk(s, x, c), RawStart: uint32(c * 16000), RawLen: 16000}
		}
		sh.Xorbs = append(sh.Xorbs, xb)
		terms = append(terms, shard.Term{Xorb: xb.Hash, UnpackedBytes: xb.BytesInXorb, ChunkEnd: benchPerXorb})
	}
	sh.Files = []shard.File{{
		Hash: fakeChunk(uint64(s), 1<<41), Terms: terms,
		Verification: []hash.Hash{fakeChunk(uint64(s), 1<<42), fakeChunk(uint64(s), 1<<42+1)},
		SHA256:       fakeChunk(uint64(s), 1<<43), HasSHA256: true,
	}}
	sh.Sort()
	return sh
}

// benchCacheDir returns the endpoint directory of the benchmark cache, generating it on first use.
func benchCacheDir(b *testing.B) (string, int64) {
	b.Helper()
	d := &benchDirOnce
	d.Do(func() {
		d.dir = filepath.Join(os.TempDir(), "localshards-bench-"+benchVersion)
		sd := filepath.Join(d.dir, ShardCacheSubdir)
		if _, err := os.Stat(filepath.Join(d.dir, benchDoneFile)); err != nil {
			start := time.Now()
			_ = os.RemoveAll(d.dir)
			if d.err = os.MkdirAll(sd, 0o755); d.err != nil {
				return
			}
			var buf []byte
			for s := 0; s < benchShards; s++ {
				sh := benchShard(s)
				created := t0.Add(-time.Duration(benchShards-s) * time.Second)
				buf = sh.AppendLocal(buf[:0], uint64(created.Unix()), uint64(created.Add(OwnShardLifetime).Unix()))
				if d.err = writeAtomic(sd, hash.Chunk(buf).String()+shardExt, buf); d.err != nil {
					return
				}
			}
			if d.err = os.WriteFile(filepath.Join(d.dir, benchDoneFile), nil, 0o644); d.err != nil {
				return
			}
			b.Logf("generated the benchmark cache in %s (%v)", d.dir, time.Since(start))
		}
		ents, err := os.ReadDir(sd)
		if err != nil {
			d.err = err
			return
		}
		for _, e := range ents {
			if info, err := e.Info(); err == nil {
				d.bytes += info.Size()
			}
		}
	})
	if d.err != nil {
		b.Fatalf("benchmark cache: %v", d.err)
	}
	return d.dir, d.bytes
}

func benchOpts() Options {
	return Options{Now: func() time.Time { return t0 }, SizeLimit: -1, RefreshInterval: -1, Log: zerolog.Nop()}
}

// BenchmarkOpenFirstLookup: open the 16M-chunk cache and answer the first lookup, from the index
// snapshot (the normal case after the first load ever), and the heap the index keeps per chunk.
func BenchmarkOpenFirstLookup(b *testing.B) {
	benchOpen(b, true)
}

// BenchmarkOpenFirstLookupNoSnapshot: the same from the shard files alone (the first load ever, or
// after the snapshot went stale): read every xorb section, sort 16M entries.
func BenchmarkOpenFirstLookupNoSnapshot(b *testing.B) {
	benchOpen(b, false)
}

func benchOpen(b *testing.B, snap bool) {
	dir, size := benchCacheDir(b)
	snapPath := filepath.Join(dir, ShardCacheSubdir, snapshotName)
	if snap { // make sure a current snapshot exists (a load without one writes it; Close waits)
		c, err := Open(dir, benchOpts())
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Load(); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	probe := benchChunk(1234, 1, 777)
	b.SetBytes(size)
	b.ReportAllocs()
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !snap {
			b.StopTimer()
			_ = os.Remove(snapPath)
			b.StartTimer()
		}
		cpu0 := testutil.ProcessCPU()
		c, err := Open(dir, benchOpts())
		if err != nil {
			b.Fatal(err)
		}
		m, ok, err := c.Lookup(probe)
		if err != nil || !ok || m.Index != 777 {
			b.Fatalf("first lookup: %v %v %d", ok, err, m.Index)
		}
		cpu += testutil.ProcessCPU() - cpu0
		if c.fromSnapshot != snap {
			b.Fatalf("fromSnapshot = %v", c.fromSnapshot)
		}
		b.StopTimer()
		c.Close() // waits for a snapshot write: not part of the open
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := Open(dir, benchOpts())
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Load(); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if c.Entries() != benchChunks {
		b.Fatalf("indexed %d chunks, want %d", c.Entries(), benchChunks)
	}
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(c.Entries()), "heapB/chunk")
	runtime.KeepAlive(c)
	c.Close()
}

func loadedBenchCache(b *testing.B) *Cache {
	dir, _ := benchCacheDir(b)
	c, err := Open(dir, benchOpts())
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Load(); err != nil {
		b.Fatal(err)
	}
	return c
}

func reportRate(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "lookups/s")
	}
}

// BenchmarkLookupMiss: chunks the cache does not hold (the common case of new data).
func BenchmarkLookupMiss(b *testing.B) {
	c := loadedBenchCache(b)
	defer c.Close()
	probes := make([]hash.Hash, 1<<16)
	for i := range probes {
		probes[i] = fakeChunk(999_999_999, uint64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok, err := c.Lookup(probes[i&(len(probes)-1)]); ok || err != nil {
			b.Fatal("unexpected hit")
		}
	}
	reportRate(b)
}

// BenchmarkLookupHitSameXorb: consecutive chunks of cached xorbs (the chunk list is read once).
func BenchmarkLookupHitSameXorb(b *testing.B) {
	c := loadedBenchCache(b)
	defer c.Close()
	probes := make([]hash.Hash, benchPerXorb)
	for i := range probes {
		probes[i] = benchChunk(42, 1, i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % benchPerXorb
		if m, ok, err := c.Lookup(probes[j]); !ok || err != nil || int(m.Index) != j {
			b.Fatal("miss")
		}
	}
	reportRate(b)
}

// BenchmarkLookupHitColdXorb: every hit in a different xorb, so each reads its chunk list
// (4,000 entries, 192 KB) from the page cache.
func BenchmarkLookupHitColdXorb(b *testing.B) {
	c := loadedBenchCache(b)
	defer c.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, x, j := (i*7919)%benchShards, i%benchXorbs, (i*31)%benchPerXorb
		if _, ok, err := c.Lookup(benchChunk(s, x, j)); !ok || err != nil {
			b.Fatal(fmt.Sprint("miss ", s, x, j))
		}
	}
	reportRate(b)
}
