package download

import (
	"unsafe"
)

// directAlign is the alignment O_DIRECT needs of buffer addresses, file offsets and lengths.
const directAlign = 4096

// runBuf gathers a run of contiguous output of one job. With direct I/O (sink.df), buf[0] always
// maps to a file offset that is a multiple of directAlign, so that the aligned middle of a run is
// written with O_DIRECT straight from buf (no copy into the page cache, nothing for the final fsync
// to flush), and only the partial blocks at its ends go through the page cache.
type runBuf struct {
	s      *sink
	buf    []byte
	direct bool
	base   int64 // file offset of buf[0]
	head   int   // buf[head:end] holds the run
	end    int
}

func newRunBuf(s *sink, buf []byte) *runBuf {
	w := &runBuf{s: s, buf: buf}
	w.direct = s.df != nil && len(buf) > 0 && uintptr(unsafe.Pointer(&buf[0]))%directAlign == 0
	return w
}

func (w *runBuf) empty() bool { return w.end == w.head }

// next is the file offset the run continues at.
func (w *runBuf) next() int64 { return w.base + int64(w.end) }

// begin starts an empty run at file offset pos.
func (w *runBuf) begin(pos int64) {
	a := int64(0)
	if w.direct {
		a = pos % directAlign
	}
	w.base, w.head, w.end = pos-a, int(a), int(a)
}

// room is how many bytes the run can still take.
func (w *runBuf) room() int { return len(w.buf) - w.end }

// free returns the empty slice where the run continues (capacity room()).
func (w *runBuf) free() []byte { return w.buf[w.end:w.end:len(w.buf)] }

func (w *runBuf) commit(n int) { w.end += n }

// flush writes the run out. When final is false the run goes on: a partial last block stays in
// the buffer (moved to its front) to be written with what follows.
func (w *runBuf) flush(final bool) error {
	if w.empty() {
		w.head, w.end = 0, 0
		return nil
	}
	if !w.direct {
		err := w.s.write(w.base+int64(w.head), w.buf[w.head:w.end])
		w.base += int64(w.end)
		w.head, w.end = 0, 0
		return err
	}
	lo := min((w.head+directAlign-1)&^(directAlign-1), w.end)
	hi := max(w.end&^(directAlign-1), lo)
	if w.head < lo {
		if err := w.s.write(w.base+int64(w.head), w.buf[w.head:lo]); err != nil {
			return err
		}
	}
	if lo < hi {
		if err := w.s.writeDirect(w.base+int64(lo), w.buf[lo:hi]); err != nil {
			return err
		}
	}
	if final {
		if hi < w.end {
			if err := w.s.write(w.base+int64(hi), w.buf[hi:w.end]); err != nil {
				return err
			}
		}
		w.head, w.end = 0, 0
		return nil
	}
	n := copy(w.buf, w.buf[hi:w.end])
	w.base += int64(hi)
	w.head, w.end = 0, n
	return nil
}
