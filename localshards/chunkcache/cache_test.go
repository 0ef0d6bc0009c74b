package chunkcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

func open(t *testing.T, dir string, limit int64) *Cache {
	t.Helper()
	c, err := Open(dir, Options{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// chunk i: 60 KiB of its own bytes and their hash.
func chunk(i int) ([]byte, hash.Hash) {
	b := testutil.RandomBytes(60<<10, uint64(i+1))
	return b, hash.Chunk(b)
}

// recorded is the bytes in use the lock file says.
func recorded(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "lock"))
	if err != nil || len(b) < 8 {
		t.Fatalf("lock file: %v (%d bytes)", err, len(b))
	}
	return int64(binary.LittleEndian.Uint64(b))
}

// writeSegment writes segment name of dir's cache by hand: data (then more, which no entry names)
// as its one chunk entry, chunk(0)'s hash, and its index; it returns the index's path.
func writeSegment(t *testing.T, dir, name string, data, more []byte) string {
	t.Helper()
	sd := filepath.Join(dir, "segments")
	if err := os.MkdirAll(sd, 0o755); err != nil {
		t.Fatal(err)
	}
	_, h := chunk(0)
	if err := os.WriteFile(filepath.Join(sd, name+".seg"), append(append([]byte(nil), data...), more...), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(sd, name+".idx")
	if err := os.WriteFile(idx, appendIndexEntry(nil, key{Chunk, h}, 0, len(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestPutGetDrop(t *testing.T) {
	c := open(t, t.TempDir(), MinLimit)
	b, h := chunk(1)
	if _, err := c.Get(Chunk, h); !errors.Is(err, ErrMiss) {
		t.Fatalf("empty cache: %v", err)
	}
	if err := c.Put(Chunk, h, b); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(Chunk, h, b); err != nil { // a second put of the same entry adds nothing
		t.Fatal(err)
	}
	got, err := c.Get(Chunk, h)
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("Get: %v", err)
	}
	if _, err := c.Get(Footer, h); !errors.Is(err, ErrMiss) {
		t.Fatalf("a chunk was found as a footer: %v", err)
	}
	c.Drop(Chunk, h)
	if _, err := c.Get(Chunk, h); !errors.Is(err, ErrMiss) {
		t.Fatalf("after Drop: %v", err)
	}
	if u, _ := c.Usage(); recorded(t, c.Dir()) > u {
		t.Fatalf("recorded %d bytes, the files take %d", recorded(t, c.Dir()), u)
	}
}

// Filling the cache four times over keeps it within its limit at every step, removes the least
// recently used segments first (the segment of an old entry that was read stays), and keeps its
// record of the bytes in use equal to what the files take.
func TestBoundAndLRU(t *testing.T) {
	dir := t.TempDir()
	const limit = MinLimit
	c := open(t, dir, limit)
	b0, h0 := chunk(0)
	if err := c.Put(Chunk, h0, b0); err != nil {
		t.Fatal(err)
	}
	var hs []hash.Hash
	for i := 1; i <= 4*limit/(60<<10); i++ {
		b, h := chunk(i)
		hs = append(hs, h)
		if err := c.Put(Chunk, h, b); err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 {
			age(t, c, h0) // its last read is older than TouchAge
			if _, err := c.Get(Chunk, h0); err != nil {
				t.Fatalf("entry 0, read all along, was evicted at %d: %v", i, err)
			}
			if u, _ := c.Usage(); u > limit {
				t.Fatalf("after %d entries the cache takes %d bytes, over its limit %d", i, u, limit)
			}
		}
	}
	if c.Has(Chunk, hs[len(hs)/4]) || !c.Has(Chunk, hs[len(hs)-1]) {
		t.Fatalf("eviction order: an early entry kept %v, the last put kept %v", c.Has(Chunk, hs[len(hs)/4]), c.Has(Chunk, hs[len(hs)-1]))
	}
	u, err := c.Usage()
	if err != nil || recorded(t, dir) != u || c.Stats().Evicted == 0 {
		t.Fatalf("recorded %d, scanned %d (%v), evicted %d", recorded(t, dir), u, err, c.Stats().Evicted)
	}
	c2 := open(t, dir, limit) // another process's view: the same entries
	if b, err := c2.Get(Chunk, hs[len(hs)-1]); err != nil || !bytes.Equal(b, mustChunk(len(hs))) {
		t.Fatalf("a second Cache on the directory: %v", err)
	}
}

// age makes the segment of entry h look last used an hour ago.
func age(t *testing.T, c *Cache, h hash.Hash) {
	t.Helper()
	l, ok := c.lookup(key{Chunk, h})
	if !ok {
		t.Fatal("entry not listed")
	}
	old := time.Now().Add(-time.Hour)
	l.seg.mu.Lock()
	l.seg.touchedAt = old
	l.seg.mu.Unlock()
	os.Chtimes(l.seg.seg, old, old)
}

func mustChunk(i int) []byte { b, _ := chunk(i); return b }

// Goroutines putting the same entries at once count each once.
func TestConcurrentPutsOfOneEntry(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, MinLimit)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				b, h := chunk(i)
				if err := c.Put(Chunk, h, b); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if u, _ := c.Usage(); recorded(t, dir) != u {
		t.Fatalf("recorded %d bytes, the files take %d", recorded(t, dir), u)
	}
}

// Four processes filling one cache at once keep it within its limit, and its record right.
func TestProcessesShareTheBound(t *testing.T) {
	if os.Getenv("CHUNKCACHE_HELPER") != "" {
		return
	}
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for p := 0; p < 4; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFill$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CHUNKCACHE_HELPER="+dir, "CHUNKCACHE_SEED="+strconv.Itoa(p*1000))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("helper: %s", out.String())
			}
		})
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	c := open(t, dir, MinLimit)
	u, err := c.Usage()
	if err != nil || u > MinLimit || recorded(t, dir) != u {
		t.Fatalf("after four processes: %d bytes (%v), recorded %d, limit %d", u, err, recorded(t, dir), MinLimit)
	}
}

// TestHelperFill is a process of TestProcessesShareTheBound: it puts 400 entries (1.5× the limit).
func TestHelperFill(t *testing.T) {
	dir := os.Getenv("CHUNKCACHE_HELPER")
	if dir == "" {
		t.Skip("a helper process of TestProcessesShareTheBound")
	}
	seed, _ := strconv.Atoi(os.Getenv("CHUNKCACHE_SEED"))
	c, err := Open(dir, Options{Limit: MinLimit})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 400; i++ {
		b, h := chunk(seed + i)
		if err := c.Put(Chunk, h, b); err != nil {
			t.Fatal(fmt.Errorf("put %d: %w", i, err))
		}
	}
}

// A limit under the least is refused, and an entry over the most.
func TestLimits(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{Limit: MinLimit - 1}); err == nil {
		t.Fatal("a cache under MinLimit opened")
	}
	c := open(t, t.TempDir(), MinLimit)
	var h hash.Hash
	if err := c.Put(Chunk, h, make([]byte, MaxEntry+1)); err == nil {
		t.Fatal("an entry over MaxEntry was put")
	}
}
