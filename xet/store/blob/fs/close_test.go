package fs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// Close gives back every file the backend opened: the packs and indexes it wrote, and those it
// opened to read (another process's, its sorted indexes, one it replaced). A process that opens and
// closes stores and lives on (a test) must not keep them until the collector runs. The backend
// stays usable, as Close promises: it reads and writes again after it.
func TestCloseReleasesEveryFile(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	writeBlobs(t, w, 0, 3*testMinTail) // past minTail: a sorted index is written too
	// An old directory, as in a store that gained no pack for a while: a listing is then trusted
	// until the directory changes, so a read after Close finds its packs only if Close forgot it.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, packDir), old, old); err != nil {
		t.Fatal(err)
	}
	r := mustRead(t, dir, 0, 3*testMinTail)
	if len(testutil.OpenFilesUnder(t, dir)) == 0 {
		t.Fatal("nothing open under the store before Close: the test checks nothing")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if open := testutil.OpenFilesUnder(t, dir); len(open) > 0 {
		t.Fatalf("after Close, %d files of the store are still open: %v", len(open), open)
	}
	mustReadWith(t, r, 0, 3*testMinTail)
	writeBlobs(t, w, 3*testMinTail, 3*testMinTail+10)
	mustReadWith(t, r, 3*testMinTail, 3*testMinTail+10)
	w.Close()
	r.Close()
}
