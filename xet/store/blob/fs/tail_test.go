package fs

import (
	"context"
	"runtime"
	"testing"
)

// A pack's tail in memory costs a key and a place per entry, not the entry's name: a process that
// reads a tail of 50,000 entries (names of 19 bytes here, about 90 in a real store) holds at most
// 64 bytes of heap for each.
func TestTailHoldsNoNames(t *testing.T) {
	const n = 50_000
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	w.packs.minTail = 2 * n // no sorted index: every entry stays in the tail
	writeBatches(t, w, 0, n)
	w.Close()

	r := newTestBackend(t, dir)
	r.packs.minTail = 2 * n
	defer r.Close()
	before := heapInUse()
	if err := r.packs.refresh(); err != nil {
		t.Fatal(err)
	}
	after := heapInUse()
	if held := r.packs.held(); held != n {
		t.Fatalf("the tail holds %d entries, want %d", held, n)
	}
	// The read buffer the process keeps for the next tail read (at most 4 MiB) is not the tail's.
	if per := float64(after-before-uint64(cap(r.packs.scratch))) / n; per > 64 {
		t.Errorf("the tail costs %.0f bytes of heap per entry, want at most 64", per)
	}
	mustFind(t, r, blobName(n/2), blobData(n/2))
	runtime.KeepAlive(r)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func mustFind(t *testing.T, b *Backend, name string, want []byte) {
	t.Helper()
	bl, err := b.Open(context.Background(), name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer bl.Close()
	got := make([]byte, bl.Size())
	if _, err := bl.ReadAt(context.Background(), got, 0); err != nil || string(got) != string(want) {
		t.Fatalf("%s: %q, %v; want %q", name, got, err, want)
	}
}

// Entries whose names share a key are told apart by the name in their record: an impostor planted
// first under a name's key (as another name with the same 64-bit key would be) is passed over, the
// same name written twice is found at its first entry, and a name whose key matches only another
// record is not found.
func TestTailKeysThatCollide(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	w.packs.minTail = 1 << 20
	writeBatches(t, w, 0, 10)
	w.Close()
	r := newTestBackend(t, dir)
	r.packs.minTail = 1 << 20
	defer r.Close()
	if err := r.packs.refresh(); err != nil {
		t.Fatal(err)
	}
	var pr *packReader
	for _, p := range r.packs.packs {
		pr = p
	}
	if pr == nil {
		t.Fatal("no pack")
	}
	place := func(i int) tailPlace {
		e, _, ok, err := pr.tail.find(pr.pack, blobName(i), nameKey(blobName(i)))
		if !ok || err != nil {
			t.Fatalf("%s not in the tail: %v", blobName(i), err)
		}
		return tailPlace{e.off, e.n}
	}
	p3, p4 := place(3), place(4)
	var tail packTail
	tail.addKey(nameKey(blobName(3)), p4) // another name's record under 3's key, first
	tail.addKey(nameKey(blobName(3)), p3)
	tail.addKey(nameKey(blobName(3)), p4) // and again after it
	tail.addKey(nameKey(blobName(5)), p4) // 5's key, only 4's record
	e, data, ok, err := tail.find(pr.pack, blobName(3), nameKey(blobName(3)))
	if !ok || err != nil || e.off != p3.off || string(data) != string(blobData(3)) {
		t.Fatalf("3 under a shared key: %+v %q %v %v", e, data, ok, err)
	}
	if _, _, ok, err := tail.find(pr.pack, blobName(5), nameKey(blobName(5))); ok || err != nil {
		t.Fatalf("5 found at another name's record: %v %v", ok, err)
	}
	if tail.len() != 4 || len(tail.keys()) != 4 {
		t.Fatalf("len %d, keys %d: want every entry kept", tail.len(), len(tail.keys()))
	}

	var dup packTail
	dup.addKey(nameKey(blobName(3)), p3)
	dup.addKey(nameKey(blobName(3)), tailPlace{p3.off, p3.n}) // the same name written twice
	if e, _, ok, _ := dup.find(pr.pack, blobName(3), nameKey(blobName(3))); !ok || e.off != p3.off {
		t.Fatalf("a name written twice: %+v %v", e, ok)
	}
}
