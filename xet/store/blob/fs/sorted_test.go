package fs

import (
	"context"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// writeBatches creates blobs [from, to) through b in batches of 500 (one fsync each), as pushes of
// many small files do.
func writeBatches(t *testing.T, b *Backend, from, to int) {
	t.Helper()
	for i := from; i < to; i += 500 {
		var bs []blob.NewBlob
		for j := i; j < min(i+500, to); j++ {
			bs = append(bs, blob.NewBlob{Name: blobName(j), Data: blobData(j)})
		}
		if _, err := b.CreateBatch(context.Background(), bs); err != nil {
			t.Fatal(err)
		}
	}
}

// A process that opens a store of many packed blobs and reads one holds in memory only the
// entries its packs' sorted indexes do not cover yet, not one entry per blob of the store.
func TestOpenHoldsOnlyTheTail(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	writeBatches(t, w, 0, 6000)
	w.Close()
	r := mustRead(t, dir, 4321, 4322)
	if n := r.packs.held(); n > 1024 {
		t.Fatalf("a reader of one blob holds %d index entries in memory, want at most 1024 of 6000", n)
	}
}
