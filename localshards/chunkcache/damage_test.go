package chunkcache

import (
	"bytes"
	"os"
	"runtime"
	"testing"
)

// TestLongIndexIsNotReadWhole: an index file whose length says nothing of what it holds (a
// power loss leaves a tail of zeros; a sparse file, a damaged one) costs no allocation of its
// length, and the entries before the damage are kept. Before the fix, Open read the whole index
// in one allocation of its length ("opening a cache with a 256 MiB index allocated 268 MB").
func TestLongIndexIsNotReadWhole(t *testing.T) {
	dir := t.TempDir()
	b, h := chunk(0)
	idx := writeSegment(t, dir, "0000000000000001-1-00000000", b, nil)
	if err := os.Truncate(idx, 256<<20); err != nil { // a hole: zeros, no disk
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := open(t, dir, MinLimit)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Fatalf("opening a cache with a 256 MiB index allocated %d MB", n>>20)
	}
	if got, err := c.Get(Chunk, h); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("the entry before the damage: %v", err)
	}
}

// TestMisframedIndexStops: an entry that is not where the one before it ended (a torn write, a
// damaged index) ends what is read of the index: the entries after it would name bytes that are
// not theirs.
func TestMisframedIndexStops(t *testing.T) {
	dir := t.TempDir()
	b, h := chunk(0)
	b2, h2 := chunk(1)
	idx := writeSegment(t, dir, "0000000000000001-1-00000000", b, b2)
	f, err := os.OpenFile(idx, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	ents := appendIndexEntry(nil, key{Chunk, h2}, int64(len(b))+7, len(b2)) // not where entry 0 ends
	if _, err := f.Write(ents); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c := open(t, dir, MinLimit)
	if got, err := c.Get(Chunk, h); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("the entry before the damage: %v", err)
	}
	if c.Has(Chunk, h2) {
		t.Fatal("an entry that does not start where the one before it ends was listed")
	}
}
