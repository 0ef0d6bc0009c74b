package fs

import (
	"os"
	"runtime"
	"testing"
)

// TestLongIndexIsNotReadWhole: a pack's .idx whose length says nothing of what it holds (a power
// loss leaves a tail of zeros; a damaged or sparse file, on a filesystem others write) costs no
// allocation of its length, neither to a reader nor to the recovery that cuts it; every blob reads
// back and the index is cut after its last whole entry. Before the fix, opening the pack read all
// of it in one allocation, twice ("reading 20 blobs through a 256 MiB index allocated 768 MB").
func TestLongIndexIsNotReadWhole(t *testing.T) {
	dir, b, _ := onePack(t, 20)
	killWriter(b) // its zeros ahead stay: the next reader recovers the pack
	idx := packFiles(t, dir, idxExt)[0]
	st, err := os.Stat(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(idx, 256<<20); err != nil { // a hole: zeros, no disk
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	mustRead(t, dir, 0, 20)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
		t.Fatalf("reading 20 blobs through a 256 MiB index allocated %d MB", n>>20)
	}
	if now, _ := os.Stat(idx); now.Size() != st.Size() {
		t.Fatalf("the index is %d bytes after recovery, want %d (cut after its last entry)", now.Size(), st.Size())
	}
}
