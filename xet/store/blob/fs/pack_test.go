package fs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestBackend(t *testing.T, dir string) *Backend {
	t.Helper()
	b, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.packs == nil {
		t.Skip("no packs on this platform")
	}
	b.packs.minTail = testMinTail
	return b
}

func blobData(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("blob %d;", i)), 1+i%300)
}

func blobName(i int) string { return fmt.Sprintf("files/%02x/blob-%05d", i%256, i) }

// writeBlobs creates blobs [from, to) concurrently through b, as a server's requests would.
func writeBlobs(t *testing.T, b *Backend, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, to-from)
	for i := from; i < to; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created, err := b.Create(context.Background(), blobName(i), bytes.NewReader(blobData(i)))
			if err == nil && !created {
				err = fmt.Errorf("%s: not created", blobName(i))
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// mustRead checks, through a backend that has read nothing yet (another process), that blobs
// [from, to) read back whole.
func mustRead(t *testing.T, dir string, from, to int) *Backend {
	t.Helper()
	b := newTestBackend(t, dir)
	mustReadWith(t, b, from, to)
	return b
}

// mustReadWith checks through b that blobs [from, to) read back whole.
func mustReadWith(t *testing.T, b *Backend, from, to int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < to; i++ {
		bl, err := b.Open(ctx, blobName(i))
		if err != nil {
			t.Fatalf("blob %d: %v", i, err)
		}
		got := make([]byte, bl.Size())
		if _, err := bl.ReadAt(context.Background(), got, 0); err != nil || !bytes.Equal(got, blobData(i)) {
			t.Fatalf("blob %d reads back %d bytes (%v), want its %d", i, len(got), err, len(blobData(i)))
		}
		bl.Close()
	}
}

func packFiles(t *testing.T, dir, ext string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, packDir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Many small blobs become one pack (two files), readable by another process's backend, listed and
// reported as existing; a second write of a name is not a second record.
func TestPackedBlobs(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, dir)
	writeBlobs(t, b, 0, 500)
	if created, err := b.Create(context.Background(), blobName(7), bytes.NewReader(blobData(7))); err != nil || created {
		t.Fatalf("second Create of a name = %v, %v; want false", created, err)
	}
	if n := len(packFiles(t, dir, packExt)); n != 1 {
		t.Fatalf("%d packs, want 1", n)
	}
	var loose int
	filepath.WalkDir(filepath.Join(dir, "files"), func(string, os.DirEntry, error) error { loose++; return nil })
	if loose > 1 {
		t.Fatalf("%d loose files for packed blobs", loose-1)
	}
	other := mustRead(t, dir, 0, 500)
	names, err := other.List(context.Background(), "files/")
	if err != nil || len(names) != 500 {
		t.Fatalf("List: %d names, %v; want 500", len(names), err)
	}
	if ok, err := other.Exists(context.Background(), blobName(499)); !ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	big := bytes.Repeat([]byte{1}, packMaxBlob+1)
	if _, err := b.Create(context.Background(), "xorbs/ab/big", bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "xorbs", "ab", "big")); err != nil {
		t.Fatalf("a blob over %d bytes is not a file of its own: %v", packMaxBlob, err)
	}
}

// A writer killed mid-append leaves a torn record and a torn index entry: readers ignore both, and
// the next writer to claim the pack cuts them and appends after the last whole record.
func TestPackTornTail(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, dir)
	writeBlobs(t, b, 0, 50)
	b.releaseIdle() // the "process" dies: its lock goes
	pack, idx := packFiles(t, dir, packExt)[0], packFiles(t, dir, idxExt)[0]
	before, _ := os.Stat(pack)
	appendFile(t, pack, appendRecord(nil, blobName(50), blobData(50))[:30])
	appendFile(t, idx, []byte{9, 0, 'f', 'i'})

	mustRead(t, dir, 0, 50)
	w := newTestBackend(t, dir)
	writeBlobs(t, w, 60, 70)
	w.releaseIdle() // cuts the zeros written ahead
	after, _ := os.Stat(pack)
	if want := before.Size() + sizeOfRecords(60, 70); after.Size() != want {
		t.Fatalf("pack is %d bytes after recovery and 10 blobs, want %d (torn record cut)", after.Size(), want)
	}
	mustRead(t, dir, 0, 50)
	mustRead(t, dir, 60, 70)
	if ok, _ := mustRead(t, dir, 0, 0).Exists(context.Background(), blobName(50)); ok {
		t.Fatal("the torn blob exists")
	}
}

// After a power loss the index may lack entries whose records were fsynced (the index is written
// after the fsync and not synced itself): the first backend to find the pack idle indexes them.
func TestPackIndexLagsRecords(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, dir)
	writeBlobs(t, b, 0, 40)
	b.releaseIdle()
	idx := packFiles(t, dir, idxExt)[0]
	ib, _ := os.ReadFile(idx)
	es, _ := parseIndex(ib[len(idxMagic):])
	cut := len(idxMagic)
	for _, e := range es[:25] {
		cut += len(appendIndexEntry(nil, e))
	}
	if err := os.Truncate(idx, int64(cut)); err != nil {
		t.Fatal(err)
	}
	r := mustRead(t, dir, 0, 40) // all 40, though the index named 25
	ib, _ = os.ReadFile(idx)
	if es, _ := parseIndex(ib[len(idxMagic):]); len(es) != 40 {
		t.Fatalf("index holds %d entries after repair, want 40", len(es))
	}
	if bad, err := r.packs.verify(); err != nil || len(bad) != 0 {
		t.Fatalf("verify after repair: %v, %v", bad, err)
	}
}

// Bytes damaged inside a pack are reported by verify (fsck), named by blob.
func TestPackDamageIsReported(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, dir)
	writeBlobs(t, b, 0, 10)
	l, ok, _ := b.packs.get(blobName(3))
	if !ok {
		t.Fatal("blob 3 not indexed")
	}
	f, err := os.OpenFile(packFiles(t, dir, packExt)[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	one := []byte{0}
	f.ReadAt(one, l.off+2)
	one[0] ^= 0x40
	f.WriteAt(one, l.off+2)
	f.Close()
	bad, err := newTestBackend(t, dir).packs.verify()
	if err != nil || len(bad) != 1 || !strings.Contains(bad[blobName(3)], "damaged") {
		t.Fatalf("verify = %v, %v; want blob 3 reported damaged", bad, err)
	}
}

// Two backends in one process (two stores on one directory) each write to a pack of their own, and
// each reads what the other wrote.
func TestPackTwoWritersOneDirectory(t *testing.T) {
	dir := t.TempDir()
	a, b := newTestBackend(t, dir), newTestBackend(t, dir)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); writeBlobs(t, a, 0, 200) }()
	go func() { defer wg.Done(); writeBlobs(t, b, 200, 400) }()
	wg.Wait()
	if n := len(packFiles(t, dir, packExt)); n != 2 {
		t.Fatalf("%d packs for two concurrent writers, want 2", n)
	}
	mustRead(t, dir, 0, 400)
	for _, be := range []*Backend{a, b} {
		if _, err := be.Open(context.Background(), blobName(399)); err != nil {
			t.Fatal(err)
		}
		if _, err := be.Open(context.Background(), blobName(0)); err != nil {
			t.Fatal(err)
		}
	}
}

// A pack whose creator died before its index was renamed into place is a stray, and so is a sorted
// index whose pack gc removed: counted by fsck, removed by CleanTemp once old.
func TestStrayPackIsCleaned(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, dir)
	writeBlobs(t, b, 0, 5)
	stray := filepath.Join(dir, packDir, "0123456789abcdef01234567")
	os.WriteFile(stray+packExt, []byte(packMagic), 0o644)
	os.WriteFile(stray+idxExt+".new", []byte(idxMagic), 0o644)
	os.WriteFile(stray+sortedExt, []byte(sortedMagic), 0o644)
	if n := b.strayPackFiles(); n != 3 {
		t.Fatalf("%d stray pack files, want 3", n)
	}
	if n, _ := b.CleanTemp(context.Background(), time.Hour); n != 0 {
		t.Fatalf("CleanTemp removed %d young files", n)
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(stray+packExt, old, old)
	os.Chtimes(stray+idxExt+".new", old, old)
	os.Chtimes(stray+sortedExt, old, old)
	if n, _ := b.CleanTemp(context.Background(), time.Hour); n != 3 {
		t.Fatalf("CleanTemp removed %d stray files, want 3", n)
	}
	mustRead(t, dir, 0, 5)
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func sizeOfRecords(from, to int) int64 {
	var n int64
	for i := from; i < to; i++ {
		n += int64(len(appendRecord(nil, blobName(i), blobData(i))))
	}
	return n
}

// A writer extends its pack with zeros ahead of its records (so a commit's fdatasync need not write
// the inode), and a writer killed with that tail in place loses nothing: readers find every blob,
// the next writer cuts the zeros and appends right after the last record, and a writer that gives
// its pack up cuts them itself.
func TestPackZerosAhead(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, dir)
	writeBlobs(t, b, 0, 20)
	pack := packFiles(t, dir, packExt)[0]
	records := int64(len(packMagic)) + sizeOfRecords(0, 20)
	if st, _ := os.Stat(pack); st.Size() != packGrow {
		t.Fatalf("a live writer's pack is %d bytes, want %d (records end at %d, zeros after)", st.Size(), packGrow, records)
	}
	writeBlobs(t, b, 20, 25)
	if st, _ := os.Stat(pack); st.Size() != packGrow {
		t.Fatalf("appends within the zeros changed the pack's size to %d", st.Size())
	}
	killWriter(b)
	mustRead(t, dir, 0, 25)
	w := newTestBackend(t, dir)
	writeBlobs(t, w, 30, 35)
	w.releaseIdle()
	want := records + sizeOfRecords(20, 25) + sizeOfRecords(30, 35)
	if st, _ := os.Stat(pack); st.Size() != want {
		t.Fatalf("pack is %d bytes after a killed writer's zeros and 5 more blobs, want %d", st.Size(), want)
	}
	mustRead(t, dir, 0, 25)
	mustRead(t, dir, 30, 35)
}

// Closing the backend (what an agent does before it exits) gives its pack up with the zeros cut,
// and the backend still takes writes afterwards.
func TestCloseCutsZerosAhead(t *testing.T) {
	dir, b, pack := onePack(t, 10)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(pack); st.Size() != int64(len(packMagic))+sizeOfRecords(0, 10) {
		t.Fatalf("pack is %d bytes after Close, want %d (records only)", st.Size(), int64(len(packMagic))+sizeOfRecords(0, 10))
	}
	writeBlobs(t, b, 10, 15)
	mustRead(t, dir, 0, 15)
}

// onePack returns a backend in a new directory that wrote blobs 0..n-1, and the path of its pack.
func onePack(t *testing.T, n int) (string, *Backend, string) {
	t.Helper()
	dir := t.TempDir()
	b := newTestBackend(t, dir)
	writeBlobs(t, b, 0, n)
	return dir, b, packFiles(t, dir, packExt)[0]
}

// Cutting a pack's tail (the zeros a killed writer left ahead, cut by the next process that opens
// the pack) keeps the pack's modification time: gc reads it as the age of the blobs in the pack, so
// a pack of trashed blobs would otherwise look new to every gc run that opens it first.
func TestCuttingZerosKeepsThePacksTime(t *testing.T) {
	dir, b, pack := onePack(t, 5)
	killWriter(b)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(pack, old, old); err != nil {
		t.Fatal(err)
	}
	mustRead(t, dir, 0, 5) // a reader repairs the idle pack
	st, err := os.Stat(pack)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != int64(len(packMagic))+sizeOfRecords(0, 5) {
		t.Fatalf("pack is %d bytes after a reader opened it, want the zeros cut", st.Size())
	}
	if !st.ModTime().Equal(old) {
		t.Fatalf("cutting the zeros moved the pack's time from %v to %v", old, st.ModTime())
	}
}

// killWriter ends b's pack writer as kill -9 would: its files close (and its lock goes), nothing is
// cut or written.
func killWriter(b *Backend) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.w.pack.Close()
	b.w.idx.Close()
	b.w = nil
}
