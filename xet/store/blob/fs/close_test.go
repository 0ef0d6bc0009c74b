package fs

import (
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// Close gives back every file the backend opened: the packs and indexes it wrote, and those it
// opened to read (another process's, its sorted indexes, one it replaced). A process that opens and
// closes stores (a test, xet-server's gc and fsck) must not keep them until the collector runs.
func TestCloseReleasesEveryFile(t *testing.T) {
	dir := t.TempDir()
	w := newTestBackend(t, dir)
	writeBlobs(t, w, 0, 3*testMinTail) // past minTail: a sorted index is written too
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
}
