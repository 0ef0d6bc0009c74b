package download

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The write-back is asked for after each writebackStep bytes written, not before, and once more
// at the end of a download that wrote its bytes; never after close.
func TestWritebackEveryStep(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	calls := make(chan *os.File, 8)
	restore := SetStartWriteback(func(g *os.File) { calls <- g })
	defer restore()
	expect := func(n int, when string) {
		t.Helper()
		for i := range n {
			select {
			case g := <-calls:
				if g != f {
					t.Fatalf("%s: write-back asked of %v, not the output", when, g.Name())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: %d of %d write-back requests made", when, i, n)
			}
		}
		select {
		case <-calls:
			t.Fatalf("%s: more than %d write-back requests", when, n)
		case <-time.After(50 * time.Millisecond):
		}
	}

	w := newWriteback(f)
	w.wrote(writebackStep - 1)
	expect(0, "one byte short of a step")
	w.wrote(1)
	expect(1, "a step written")
	w.wrote(writebackStep / 2)
	w.wrote(writebackStep / 2)
	expect(1, "a second step in two writes")
	w.wrote(100)
	w.close(true)
	expect(1, "the end of the download")

	w = newWriteback(f)
	w.wrote(100)
	w.close(false)
	expect(0, "a failed download")
}
