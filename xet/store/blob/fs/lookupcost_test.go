package fs

import (
	"context"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// sortedReadsDuring returns how many reads of sorted indexes fn made.
func sortedReadsDuring(fn func()) int64 {
	before := sortedReads.Load()
	fn()
	return sortedReads.Load() - before
}

// A batch of new small blobs is looked up once per blob before it is written: a push of 50,000
// small files makes about 150,000 new records, and every extra pass over the sorted indexes was a
// read per record and pack (the first check, a second after a refresh that found nothing new, and
// the writer's re-check for a record another caller published meanwhile).
func TestNewBlobsAreLookedUpOnce(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, dir)
	writeBatches(t, b, 0, 3000)
	if len(sortedFiles(t, dir)) == 0 {
		t.Fatal("the store has no sorted index: the test measures nothing")
	}
	for round := range 3 {
		var bs []blob.NewBlob
		for i := 3000 + 500*round; i < 3500+500*round; i++ {
			bs = append(bs, blob.NewBlob{Name: blobName(i), Data: blobData(i)})
		}
		var created []bool
		reads := sortedReadsDuring(func() {
			var err error
			if created, err = b.CreateBatch(context.Background(), bs); err != nil {
				t.Fatal(err)
			}
		})
		for i, c := range created {
			if !c {
				t.Fatalf("round %d: blob %d was not created", round, i)
			}
		}
		if reads > int64(len(bs)) {
			t.Fatalf("round %d: writing %d new blobs read the sorted index %d times, want at most one read a blob",
				round, len(bs), reads)
		}
	}
	mustRead(t, dir, 0, 4500)
}

// A lookup remembers the entries its binary search probed: once a key's bucket has been searched,
// a lookup in it reads only its final window, however large the bucket is. At 50,000 files a
// bucket held about 700 entries, and each lookup made two probing reads before the window's.
func TestLookupsReadOnlyTheirWindowOnceWarm(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	writeBatches(t, w, 0, 6000)
	w.Close()
	defer func(n int) { sortedWindow = n }(sortedWindow)
	sortedWindow = 4 // buckets of about 23 entries: three probes each
	r := mustRead(t, dir, 0, 1)
	miss := func(from, to int) int64 {
		return sortedReadsDuring(func() {
			for i := from; i < to; i++ {
				if ok, err := r.Exists(context.Background(), blobName(i)); ok || err != nil {
					t.Fatalf("Exists(%s) = %v, %v; want false", blobName(i), ok, err)
				}
			}
		})
	}
	if cold := miss(200000, 201000); cold <= 1000 {
		t.Fatalf("1000 cold lookups read the sorted index %d times: they probed nothing, the test measures nothing", cold)
	}
	if warm := miss(200000, 201000); warm > 1000 {
		t.Fatalf("1000 lookups of missing names whose buckets were searched before read the sorted index %d times, want one read each", warm)
	}
	mustRead(t, dir, 0, 6000) // and every stored blob is still found, with its bytes
}

// Batches that race to write the same new blobs write each once, and exactly one of them reports
// it created: the writer looks again for what another batch published since its own lookup (a
// store counts a registration as new only when it created it).
func TestRacingBatchesCreateEachBlobOnce(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, dir)
	writeBatches(t, b, 0, 2000)
	for round := range 20 {
		var bs []blob.NewBlob
		for i := 2000 + 50*round; i < 2050+50*round; i++ {
			bs = append(bs, blob.NewBlob{Name: blobName(i), Data: blobData(i)})
		}
		var wg sync.WaitGroup
		created := make([][]bool, 4)
		for g := range created {
			wg.Go(func() {
				c, err := b.CreateBatch(context.Background(), bs)
				if err != nil {
					t.Error(err)
				}
				created[g] = c
			})
		}
		wg.Wait()
		for i := range bs {
			n := 0
			for g := range created {
				if created[g][i] {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("round %d: %s was reported created by %d of 4 racing batches, want 1", round, bs[i].Name, n)
			}
		}
	}
	listed, err := b.packs.all("")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 3000 {
		t.Fatalf("the packs hold %d blobs, want 3000", len(listed))
	}
}
