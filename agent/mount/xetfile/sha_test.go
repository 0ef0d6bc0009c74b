package xetfile

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// A file read whole tail first (footer-first formats read so), larger than the memory cache, has
// its SHA-256 compared all the same: the prefix reaches the tail a read returned before and memory
// lost, and is finished in the background. With an oid that is not the content's, the reads after
// that fail. Before, the prefix stopped there: every byte was returned, and the oid never checked.
func TestTailFirstReadIsStillChecked(t *testing.T) {
	a := testutil.RandomBytes(3<<20, 14)
	w := newWorld(t, a)
	oid := oidOf(a)
	r := w.res[oid]
	src := Source{CAS: w.cas, File: r.FileHash, Concurrency: 4, Retry: retry.Policy{Attempts: 3, BaseDelay: time.Millisecond}, Where: "the test store"}
	for _, c := range []struct {
		name string
		sha  [32]byte
	}{{"its own oid", r.SHA256}, {"another oid", [32]byte{1}}} {
		fs := w.files2(Config{MemBytes: 1 << 20})
		f := fs.Open(oid, r.Size, c.sha, "", func(context.Context) (Source, error) { return src, nil })
		size, tail := int64(len(a)), int64(64<<10)
		got := make([]byte, size)
		if _, err := f.ReadAt(context.Background(), got[size-tail:], size-tail); err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < size-tail; off += 128 << 10 {
			n := min(128<<10, size-tail-off)
			if _, err := f.ReadAt(context.Background(), got[off:off+n], off); err != nil {
				t.Fatalf("%s: read at %d: %v", c.name, off, err)
			}
		}
		if !bytes.Equal(got, a) {
			t.Fatalf("%s: the reads returned wrong bytes", c.name)
		}
		if !testutil.Eventually(30*time.Second, func() bool { st := fs.Stats(); return st.SHAVerified+st.SHAMismatch > 0 }) {
			t.Fatalf("%s: the SHA-256 of the file read whole was never compared (prefix at %d of %d)", c.name, f.track.pos, size)
		}
		_, err := f.ReadAt(context.Background(), make([]byte, 10), 0)
		st := fs.Stats()
		switch c.sha {
		case r.SHA256:
			if st.SHAVerified != 1 || err != nil {
				t.Errorf("%s: %+v, read after: %v; want it verified", c.name, st, err)
			}
		default:
			if st.SHAMismatch != 1 || err == nil || !strings.Contains(err.Error(), "not its oid") {
				t.Errorf("%s: %+v, read after: %v; want the mismatch, and reads after it failed", c.name, st, err)
			}
		}
	}
}

// A file read in part out of order (a model's tensors, read as a program needs them) is not
// read again to finish its SHA-256: only a file whose every byte from the prefix on was returned
// is. The prefix here reaches bytes read before, but not the end of the file.
func TestPartialReadIsNotReadAgain(t *testing.T) {
	a := testutil.RandomBytes(3<<20, 15)
	w := newWorld(t, a)
	fs := w.files2(Config{MemBytes: 1 << 20})
	f := w.open(fs, oidOf(a))
	buf := make([]byte, 512<<10)
	if _, err := f.ReadAt(context.Background(), buf, 2<<20); err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < 2<<20; off += 128 << 10 {
		if _, err := f.ReadAt(context.Background(), buf[:128<<10], off); err != nil {
			t.Fatal(err)
		}
	}
	f.track.mu.Lock()
	finishing := f.track.finishing
	f.track.mu.Unlock()
	if finishing {
		t.Fatal("the mount reads on to finish the SHA-256 of a file not read whole")
	}
}

// Files read whole tail first, all at once, each need their SHA-256 finished in the background,
// and each finisher holds a read buffer of finishSHABytes and fetch slots the reads need: at most
// maxFinishers run at a time, the others wait for a turn, and every file is still checked.
func TestSHAFinishersAreBounded(t *testing.T) {
	const files = 3 * maxFinishers
	var contents [][]byte
	for i := range files {
		contents = append(contents, testutil.RandomBytes(3<<20, uint64(40+i)))
	}
	w := newWorld(t, contents...)
	// No read-ahead: it would fetch the tails before the finishers do. Unbounded finishers, held,
	// would also take every fetch slot of the source (Concurrency 4) and stall the reads: those
	// then fail after Wait.
	fs := w.files2(Config{MemBytes: 1 << 20, ReadAheadMax: 1, Wait: 20 * time.Second})
	w.cas.mu.Lock()
	w.cas.stallAgain = make(chan struct{})
	w.cas.mu.Unlock()
	released := false
	defer func() {
		if !released {
			close(w.cas.stallAgain)
		}
	}()
	for _, a := range contents {
		f := w.open(fs, oidOf(a))
		// The tail starts at a chunk's start, so the reads before it fetch none of its chunks:
		// only the finisher fetches them again.
		size, tail := int64(len(a)), int64(0)
		for at := 0; at < len(a); {
			n := chunk.Next(a[at:])
			if n == 0 { // the last chunk
				n = len(a) - at
			}
			if tail == 0 || size-int64(at) >= 64<<10 {
				tail = size - int64(at)
			}
			at += n
		}
		if _, err := f.ReadAt(context.Background(), make([]byte, tail), size-tail); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 128<<10)
		for off := int64(0); off < size-tail; off += int64(len(buf)) {
			n := min(int64(len(buf)), size-tail-off)
			if _, err := f.ReadAt(context.Background(), buf[:n], off); err != nil {
				t.Fatalf("read at %d: %v", off, err)
			}
		}
	}
	// Every file's finisher started; the tail reads they make again are held.
	if !testutil.Eventually(30*time.Second, func() bool { return fs.finishStarted.Load() == files }) {
		t.Fatalf("%d finishers started, want %d", fs.finishStarted.Load(), files)
	}
	if !testutil.Eventually(30*time.Second, func() bool { return fs.finishHolding.Load() >= maxFinishers }) {
		t.Fatalf("%d finishers hold a buffer, want %d", fs.finishHolding.Load(), maxFinishers)
	}
	released = true
	close(w.cas.stallAgain)
	if !testutil.Eventually(30*time.Second, func() bool { return fs.Stats().SHAVerified == files }) {
		t.Fatalf("%+v: want all %d files verified", fs.Stats(), files)
	}
	if peak := fs.finishPeak.Load(); peak > maxFinishers {
		t.Errorf("%d finishers held a buffer at once, want at most %d", peak, maxFinishers)
	}
}
