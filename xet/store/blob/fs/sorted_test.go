package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// testMinTail is the tests' sortMinTail: stores of a few thousand blobs get sorted indexes.
const testMinTail = 1024

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

func sortedFiles(t *testing.T, dir string) []string { return packFiles(t, dir, sortedExt) }

// mustMiss checks that b finds no blob under name.
func mustMiss(t *testing.T, b *Backend, name string) {
	t.Helper()
	if _, err := b.Open(context.Background(), name); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Open(%s) = %v, want ErrNotFound", name, err)
	}
	if ok, err := b.Exists(context.Background(), name); ok || err != nil {
		t.Fatalf("Exists(%s) = %v, %v; want false", name, ok, err)
	}
}

// Blobs are found wherever their entry is: in a pack's sorted index, in the tail after it, in a
// second pack with a sorted index of its own; listings name each once, and names not stored miss.
func TestLookupsAcrossSortedAndTail(t *testing.T) {
	dir := t.TempDir()
	a := newTestBackend(t, dir)
	writeBatches(t, a, 0, 3000)
	b := newTestBackend(t, dir) // a second writer: a second pack
	writeBatches(t, b, 3000, 5000)
	writeBatches(t, a, 5000, 5300) // a tail after a's sorted index
	a.Close()
	b.Close()
	if n := len(sortedFiles(t, dir)); n != 2 {
		t.Fatalf("%d sorted indexes, want one per pack (2)", n)
	}
	r := mustRead(t, dir, 0, 5300)
	if n := r.packs.held(); n > 2*testMinTail {
		t.Fatalf("%d entries held in memory, want the tails only", n)
	}
	names, err := r.List(context.Background(), "files/")
	if err != nil || len(names) != 5300 {
		t.Fatalf("List: %d names, %v; want 5300", len(names), err)
	}
	mustMiss(t, r, blobName(5300))
	mustMiss(t, r, "files/00/blob-0000") // a prefix of a stored name
	if created, err := r.Create(context.Background(), blobName(17), bytes.NewReader(blobData(17))); created || err != nil {
		t.Fatalf("Create of a name in a sorted index = %v, %v; want not created", created, err)
	}
}

// A process that has read the store finds what another process writes afterwards, whether it
// lands in the other's tail or in a sorted index the other wrote meanwhile; and its own memory
// stays bounded by taking that sorted index up.
func TestOtherProcessesEntriesAreFound(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	writeBatches(t, w, 0, 100)
	r := mustRead(t, dir, 0, 100)
	writeBatches(t, w, 100, 150)
	if _, err := r.Open(context.Background(), blobName(149)); err != nil {
		t.Fatalf("a blob another process wrote since: %v", err)
	}
	writeBatches(t, w, 150, 8000) // w sorts its pack again, more than once
	for _, i := range []int{7999, 4000, 120} {
		if _, err := r.Open(context.Background(), blobName(i)); err != nil {
			t.Fatalf("blob %d, written after this process read the pack: %v", i, err)
		}
	}
	if n := r.packs.held(); n > testMinTail {
		t.Fatalf("%d entries held after the other process sorted its pack, want at most %d", n, testMinTail)
	}
}

// gc's sweep rewrites a pack that has a sorted index: the index goes with the pack, the blobs it
// kept or renamed are found in the new pack, the dropped one nowhere, by this process and, once it
// refreshes, by another that had read the old pack's sorted index.
func TestSweepOfASortedPack(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	writeBatches(t, w, 0, 3000)
	w.Close()
	old := sortedFiles(t, dir)
	if len(old) != 1 {
		t.Fatalf("%d sorted indexes, want 1", len(old))
	}
	other := mustRead(t, dir, 0, 3000)
	gc := newTestBackend(t, dir)
	applied, err := gc.SweepPacked(context.Background(), []blob.PackChange{{Name: blobName(1)}, {Name: blobName(2), To: "trash/" + blobName(2)}})
	if err != nil || len(applied) != 2 {
		t.Fatalf("SweepPacked = %v, %v", applied, err)
	}
	gc.Close()
	if _, err := os.Stat(old[0]); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the rewritten pack's sorted index is still there: %v", err)
	}
	other.packs.refreshedAt.Store(0) // PackStaleness has passed
	for _, b := range []*Backend{gc, other, mustRead(t, dir, 3, 3000)} {
		mustMiss(t, b, blobName(1))
		mustMiss(t, b, blobName(2))
		if _, err := b.Open(context.Background(), "trash/"+blobName(2)); err != nil {
			t.Fatalf("the renamed blob: %v", err)
		}
		if _, err := b.Open(context.Background(), blobName(2999)); err != nil {
			t.Fatalf("a kept blob: %v", err)
		}
	}
}

// A sorted index that is not whole is ignored (the pack's .idx is read instead) and written again;
// one whose bytes were damaged in place is found by fsck's verify, removed, and written again,
// and no lookup ever answers another blob's bytes for a name.
func TestDamagedSortedIndex(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	writeBatches(t, w, 0, 2000)
	w.Close()
	sidx := sortedFiles(t, dir)[0]
	st, _ := os.Stat(sidx)
	if err := os.Truncate(sidx, st.Size()-10); err != nil {
		t.Fatal(err)
	}
	r := mustRead(t, dir, 0, 2000)
	if s := openSortedIndex(sidx); s == nil || s.count != 2000 {
		t.Fatalf("the cut sorted index was not written again whole: %+v", s)
	}
	if n := r.packs.held(); n > testMinTail {
		t.Fatalf("%d entries held after the sorted index was written again", n)
	}
	// Every entry's offset moved by one byte: lookups find no record of that name there.
	b, _ := os.ReadFile(sidx)
	for i := 0; i < 2000; i++ {
		b[sortedHeader+i*sortedEntry+8]++
	}
	os.WriteFile(sidx, b, 0o644)
	d := newTestBackend(t, dir)
	if _, err := d.Open(context.Background(), blobName(5)); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a damaged sorted index answered %v, want not found", err)
	}
	if bad, err := d.packs.verify(); err != nil || len(bad) != 0 {
		t.Fatalf("verify = %v, %v; want no damaged blob", bad, err)
	}
	if _, err := os.Stat(sidx); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("verify kept a sorted index that does not check: %v", err)
	}
	mustRead(t, dir, 0, 2000)
}

// After a power loss the .idx may lack entries its sorted index covers, or entries after it: the
// first process to find the pack idle re-indexes from the records, and every blob is found.
func TestRecoveryBehindTheSortedIndex(t *testing.T) {
	for _, keep := range []int{1500, 100} { // entries of the .idx left: past, then before, the sorted index's end
		dir := t.TempDir()
		w := newTestBackend(t, dir)
		writeBatches(t, w, 0, 2000)
		w.Close()
		idx := packFiles(t, dir, idxExt)[0]
		ib, _ := os.ReadFile(idx)
		es, _ := parseIndex(ib[len(idxMagic):])
		cut := len(idxMagic)
		for _, e := range es[:keep] {
			cut += len(appendIndexEntry(nil, e))
		}
		if err := os.Truncate(idx, int64(cut)); err != nil {
			t.Fatal(err)
		}
		mustRead(t, dir, 0, 2000)
		ib, _ = os.ReadFile(idx)
		if es, _ := parseIndex(ib[len(idxMagic):]); len(es) != 2000 {
			t.Fatalf("keeping %d: the index holds %d entries after repair, want 2000", keep, len(es))
		}
		v := newTestBackend(t, dir)
		writeBatches(t, v, 2000, 2010) // a writer claims the repaired pack
		mustRead(t, dir, 0, 2010)
	}
}

// held counts the index entries this process holds in memory (the tails).
func (ps *packSet) held() int {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	n := 0
	for _, r := range ps.packs {
		n += r.tail.len()
	}
	return n
}

// Reads run while another backend on the directory writes and sorts its pack again and again: every
// blob written before a read began is found.
func TestReadsWhileAnotherSorts(t *testing.T) {
	dir := t.TempDir()
	w, r := newTestBackend(t, dir), newTestBackend(t, dir)
	done := make(chan struct{})
	var written atomic.Int64
	go func() {
		defer close(done)
		for i := 0; i < 6000; i += 500 {
			writeBatches(t, w, i, i+500)
			written.Store(int64(i + 500))
		}
	}()
	reads := 0
	for running := true; running; reads++ {
		select {
		case <-done:
			running = false
		default:
		}
		n := int(written.Load())
		if n == 0 {
			continue
		}
		for _, i := range []int{n - 1, n / 2, 0} {
			if _, err := r.Open(context.Background(), blobName(i)); err != nil {
				t.Fatalf("blob %d of %d written: %v", i, n, err)
			}
		}
	}
	mustRead(t, dir, 0, 6000)
}

// A sorted index whose header was damaged (here the end of the records it names, which recovery
// starts from) is not trusted: the pack is not cut, and every blob is found.
func TestDamagedSortedHeaderIsNotTrusted(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	writeBatches(t, w, 0, 1500) // sorted whole: no tail
	w.Close()
	sidx, pack := sortedFiles(t, dir)[0], packFiles(t, dir, packExt)[0]
	before, _ := os.Stat(pack)
	b, _ := os.ReadFile(sidx)
	binary.LittleEndian.PutUint64(b[len(sortedMagic)+8:], 100) // dataEnd: inside the first record
	os.WriteFile(sidx, b, 0o644)
	mustRead(t, dir, 0, 1500)
	if after, _ := os.Stat(pack); after.Size() != before.Size() {
		t.Fatalf("the pack went from %d to %d bytes after a reader found a damaged sorted index", before.Size(), after.Size())
	}
}

// A listing reads a pack's .idx a piece at a time: pieces that cut entries anywhere give every
// entry once, in order.
func TestReadIndexInPieces(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	writeBatches(t, w, 0, 700)
	w.Close()
	ib, _ := os.ReadFile(packFiles(t, dir, idxExt)[0])
	want, _ := parseIndex(ib[len(idxMagic):])
	r := newTestBackend(t, dir)
	if err := r.packs.refresh(); err != nil {
		t.Fatal(err)
	}
	for _, pr := range r.packs.packs {
		for _, size := range []int{200, 1000, 4096} {
			var got []packEntry
			if err := readIndex(pr, int64(len(ib)), make([]byte, size), func(e packEntry) { got = append(got, e) }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("pieces of %d bytes: %d entries, want %d", size, len(got), len(want))
			}
		}
	}
}

// A lookup narrows its key's bucket on disk down to sortedWindow entries and searches those in
// memory: whatever the window, every blob is found with its bytes (those of at most smallRecord
// bytes read with their name, the others from the pack), and names not stored miss.
func TestLookupWindows(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	writeBatches(t, w, 0, 3000)
	w.Close()
	defer func(n int) { sortedWindow = n }(sortedWindow)
	for _, n := range []int{1, 5, sortedWindow} {
		sortedWindow = n
		r := mustRead(t, dir, 0, 3000)
		mustMiss(t, r, blobName(3000))
		mustMiss(t, r, "files/00/blob-0000")
		if n := r.packs.held(); n >= 3000 {
			t.Fatalf("%d entries held in memory: the lookups did not use the sorted index", n)
		}
		r.Close()
	}
}
