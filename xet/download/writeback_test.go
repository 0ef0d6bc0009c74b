package download_test

import (
	"bytes"
	"os"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
)

// A large download asks for its write-back (so that a sync after it finds little left to write),
// the last time once every byte is written; a small one leaves it to the kernel. When the requests
// come while the bytes are written is TestWritebackEveryStep's.
func TestDownloadStartsWriteback(t *testing.T) {
	c := embeddedtest.New(t)
	large := testutil.RandomBytes(24<<20+4321, 7)
	small := testutil.RandomBytes(1<<20, 8)
	res := uploadAll(t, c, large, small)
	var mu sync.Mutex
	var seen []int64 // bytes of the output that hold their final content at each request
	var want []byte
	restore := download.SetStartWriteback(func(f *os.File) {
		got, err := os.ReadFile(f.Name())
		if err != nil {
			t.Error(err)
			return
		}
		n := 0 // whole 64 KiB blocks that match from the start, then bytes
		for n+64<<10 <= min(len(got), len(want)) && bytes.Equal(got[n:n+64<<10], want[n:n+64<<10]) {
			n += 64 << 10
		}
		for n < len(got) && n < len(want) && got[n] == want[n] {
			n++
		}
		mu.Lock()
		seen = append(seen, int64(n))
		mu.Unlock()
	})
	defer restore()

	want = large
	if got := fetchFile(t, c, res[0], nil); !bytes.Equal(got, large) {
		t.Fatal("large download differs")
	}
	mu.Lock()
	if len(seen) == 0 {
		t.Fatalf("no write-back request for a %d-byte download", len(large))
	}
	if last := seen[len(seen)-1]; last != int64(len(large)) {
		t.Errorf("the last write-back request saw %d of %d bytes written", last, len(large))
	}
	seen = nil
	mu.Unlock()

	want = small
	if got := fetchFile(t, c, res[1], nil); !bytes.Equal(got, small) {
		t.Fatal("small download differs")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Errorf("%d write-back requests for a %d-byte download, want none", len(seen), len(small))
	}
}
