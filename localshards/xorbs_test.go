package localshards

import (
	"slices"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// Xorbs answers the chunk lists of the xorbs an unexpired cached shard lists, by xorb hash, read
// by another process from the files; an expired shard's xorbs and unknown ones are left out, and
// after Forget nothing is answered.
func TestXorbsByHash(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t0)
	c := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: -1})
	s, old := testShard(1, 3, 50), testShard(2, 1, 10)
	for _, sh := range []struct {
		s  *shard.Shard
		at time.Time
	}{{s, t0}, {old, t0.Add(-30 * 24 * time.Hour)}} {
		clk.Set(sh.at)
		if err := c.AddOwn(sh.s); err != nil {
			t.Fatal(err)
		}
	}
	clk.Set(t0)
	reader := openTest(t, dir, Options{Now: clk.Now, RefreshInterval: -1})
	unknown := fakeChunk(9, 9)
	got, err := reader.Xorbs([]hash.Hash{s.Xorbs[2].Hash, s.Xorbs[0].Hash, old.Xorbs[0].Hash, unknown})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Xorbs answered %d xorbs, want the 2 of the unexpired shard", len(got))
	}
	for _, x := range []int{0, 2} {
		if !slices.Equal(got[s.Xorbs[x].Hash], s.Xorbs[x].Chunks) {
			t.Errorf("xorb %d: chunks differ from the shard's", x)
		}
	}
	if _, err := reader.Forget([]hash.Hash{s.Xorbs[1].Hash}); err != nil {
		t.Fatal(err)
	}
	if got, err := reader.Xorbs([]hash.Hash{s.Xorbs[0].Hash}); err != nil || len(got) != 0 {
		t.Errorf("after Forget Xorbs = %d xorbs, %v; want none", len(got), err)
	}
}
