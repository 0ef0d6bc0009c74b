package localshards

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// fakeChunk returns a deterministic pseudo-random chunk hash for (seed, i) (SplitMix64, not BLAKE3:
// the index does not care and large tests stay fast).
func fakeChunk(seed, i uint64) hash.Hash {
	var h hash.Hash
	s := seed*0x9E3779B97F4A7C15 ^ i*0xD1B54A32D192ED03
	for w := 0; w < 4; w++ {
		s += 0x9E3779B97F4A7C15
		z := s
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
		binary.LittleEndian.PutUint64(h[w*8:], z)
	}
	return h
}

// testShard builds an own-upload shard: nx xorbs of per chunks each (chunk hashes fakeChunk(seed,
// x*per+c), 1000 raw bytes each) and one file made of all of them.
func testShard(seed uint64, nx, per int) *shard.Shard {
	s := &shard.Shard{Version: shard.HeaderVersion}
	var all []hash.Hash
	var terms []shard.Term
	for x := 0; x < nx; x++ {
		xb := shard.Xorb{}
		var ents []hash.Entry
		for c := 0; c < per; c++ {
			h := fakeChunk(seed, uint64(x*per+c))
			xb.Chunks = append(xb.Chunks, shard.XorbChunk{Hash: h, RawStart: uint32(c * 1000), RawLen: 1000})
			ents = append(ents, hash.Entry{Hash: h, Size: 1000})
			all = append(all, h)
		}
		xb.Hash = hash.Merkle(ents)
		xb.BytesInXorb = uint32(per * 1000)
		s.Xorbs = append(s.Xorbs, xb)
		terms = append(terms, shard.Term{Xorb: xb.Hash, UnpackedBytes: uint32(per * 1000), ChunkEnd: uint32(per)})
	}
	ents := make([]hash.Entry, len(all))
	for i, h := range all {
		ents[i] = hash.Entry{Hash: h, Size: 1000}
	}
	s.Files = []shard.File{testutil.NewFile(hash.File(ents), terms, all, [32]byte{byte(seed)})}
	s.Sort()
	return s
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// t0 is the tests' "now": after every fixed timestamp of the reference shards.
var t0 = time.Date(2025, 9, 30, 12, 0, 0, 0, time.UTC)

func openTest(t testing.TB, dir string, o Options) *Cache {
	t.Helper()
	c, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// shardFiles returns the names of the files in the cache's shard directory matching ext, sorted.
func shardFiles(t testing.TB, c *Cache, ext string) []string {
	t.Helper()
	ents, err := os.ReadDir(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ext {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// mustFind looks chunk up and checks it is chunk idx of xorb x, unkeyed.
func mustFind(t testing.TB, c *Cache, chunk hash.Hash, x hash.Hash, idx int) shard.Match {
	t.Helper()
	m, ok, err := c.Lookup(chunk)
	if err != nil || !ok {
		t.Fatalf("Lookup(%s) = ok %v, err %v; want a match in xorb %s", chunk, ok, err, x)
	}
	if m.Xorb != x || int(m.Index) != idx || !m.Key.IsZero() {
		t.Fatalf("Lookup(%s) = xorb %s index %d key %s; want xorb %s index %d unkeyed", chunk, m.Xorb, m.Index, m.Key, x, idx)
	}
	if m.Chunks[m.Index].Hash != chunk {
		t.Fatalf("Lookup(%s): Chunks[%d] = %s", chunk, m.Index, m.Chunks[m.Index].Hash)
	}
	return m
}

func mustMiss(t testing.TB, c *Cache, chunk hash.Hash) {
	t.Helper()
	m, ok, err := c.Lookup(chunk)
	if err != nil || ok {
		t.Fatalf("Lookup(%s) = %+v, %v, %v; want a miss", chunk, m.Xorb, ok, err)
	}
}

// has reports whether key is in s (a candidate only: refs still need verifying).
func (s *segment) has(key uint64) bool { return s.candidates(key, 0) >= 0 }
