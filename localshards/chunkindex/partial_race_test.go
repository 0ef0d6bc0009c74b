package chunkindex

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// A process that opened a record just before its holder finished (removed it and let it go) gets
// the lock on a file no name leads to any more. It must not keep it: a third process then creates
// the record again and locks that, and two processes would each hold "the" partial download and
// write one .part file, one renaming it away to hand it to git-lfs while the other still writes.
// Before, the second open took the removed record and the third open was granted too.
func TestPartialRemovedWhileOpeningIsNotHeld(t *testing.T) {
	if !locks {
		t.Skip("partial records are not locked on this platform")
	}
	path := filepath.Join(t.TempDir(), "part")
	file := hash.Hash{7}
	first, err := OpenPartial(path, file, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { partialOpened = func() {} })
	partialOpened = func() { // the second has opened the record, not locked it yet
		partialOpened = func() {}
		if err := first.Close(true); err != nil {
			t.Error(err)
		}
	}
	second, err := OpenPartial(path, file, 4<<20)
	if err != nil {
		t.Fatalf("opening a record its holder finished meanwhile: %v", err)
	}
	defer second.Close(true)
	if third, err := OpenPartial(path, file, 4<<20); !errors.Is(err, ErrBusy) {
		if err == nil {
			third.Close(false)
		}
		t.Fatalf("a third open while the second holds the record: %v, want ErrBusy", err)
	}
}
