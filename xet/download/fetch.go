package download

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// writeBuf is how many contiguous output bytes a job gathers before one WriteAt.
const writeBuf = 4 << 20

// sink is where jobs put their bytes: the temp file, the chunk hashes of the file (when the
// whole file is verified), and progress.
type sink struct {
	f      *os.File
	l      *layout
	ents   [][]hash.Entry // per term, per chunk; nil when not verifying
	mu     sync.Mutex
	done   int64
	report func(int64)
}

func (s *sink) progress(n int64) {
	s.mu.Lock()
	s.done += n
	if s.report != nil {
		s.report(s.done)
	}
	s.mu.Unlock()
}

// writer gathers contiguous output of one job into one buffer.
type writer struct {
	s     *sink
	buf   []byte
	start int64
}

func (w *writer) write(pos int64, b []byte) error {
	if len(w.buf) > 0 && (pos != w.start+int64(len(w.buf)) || len(w.buf)+len(b) > cap(w.buf)) {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if len(w.buf) == 0 {
		w.start = pos
	}
	if len(b) > cap(w.buf) {
		return w.direct(pos, b)
	}
	w.buf = append(w.buf, b...)
	return nil
}

func (w *writer) direct(pos int64, b []byte) error {
	if _, err := w.s.f.WriteAt(b, pos); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	w.s.progress(int64(len(b)))
	return nil
}

func (w *writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.direct(w.start, w.buf)
	w.buf = w.buf[:0]
	return err
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, writeBuf); return &b }}

// run fetches j's range, decodes its records, cuts each term to its chunks and writes them at
// their places. It checks the chunk count of the range and each term's decoded length.
func (j *job) run(ctx context.Context, get fetcher, s *sink) (err error) {
	rc, err := get(ctx, j)
	if err != nil {
		return err
	}
	defer rc.Close()
	bp := bufPool.Get().(*[]byte)
	w := &writer{s: s, buf: (*bp)[:0]}
	defer func() { *bp = w.buf[:0]; bufPool.Put(bp) }()

	br := bufio.NewReaderSize(rc, 1<<20)
	rr := xorb.NewRecordReader(br)
	hasher := hash.NewChunkHasher()
	l := s.l
	cursor := make([]int64, len(j.terms)) // bytes of each term decoded so far
	next, active := 0, make([]int, 0, 8)  // terms (positions in j.terms) containing the current chunk
	var raw []byte
	n := j.rng.Chunks.End - j.rng.Chunks.Start
	for k := uint32(0); k < n; k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		ci := j.rng.Chunks.Start + k
		raw, _, err = rr.Next(raw[:0])
		if err == io.EOF {
			return fmt.Errorf("xorb %s: range %s has %d chunks, plan says %d", j.xorb, j.rng.Bytes.Header(), k, n)
		}
		if err != nil {
			return fmt.Errorf("xorb %s range %s: %w", j.xorb, j.rng.Bytes.Header(), err)
		}
		// Update the terms containing chunk ci.
		keep := active[:0]
		for _, a := range active {
			if l.terms[j.terms[a]].Range.End > ci {
				keep = append(keep, a)
			}
		}
		active = keep
		for next < len(j.terms) && l.terms[j.terms[next]].Range.Start <= ci {
			if l.terms[j.terms[next]].Range.End > ci {
				active = append(active, next)
			}
			next++
		}
		var h hash.Hash
		if s.ents != nil && len(active) > 0 {
			h = hasher.Sum(raw)
		}
		for _, a := range active {
			ti := j.terms[a]
			t := l.terms[ti]
			if s.ents != nil {
				s.ents[ti][ci-t.Range.Start] = hash.Entry{Hash: h, Size: uint64(len(raw))}
			}
			pos := l.pos[ti] + cursor[a]
			cursor[a] += int64(len(raw))
			if cursor[a] > int64(t.UnpackedLength) {
				return fmt.Errorf("term %d (xorb %s chunks [%d, %d)): decodes to more than its %d bytes",
					ti, t.Hash, t.Range.Start, t.Range.End, t.UnpackedLength)
			}
			lo, hi := int64(0), int64(len(raw))
			if pos < 0 {
				lo = min(-pos, hi)
			}
			if pos+hi > l.size {
				hi = max(l.size-pos, lo)
			}
			if lo < hi {
				if err := w.write(pos+lo, raw[lo:hi]); err != nil {
					return err
				}
			}
		}
	}
	if _, _, err := rr.Next(raw[:0]); err != io.EOF {
		if err == nil {
			err = errors.New("more records than chunks")
		}
		return fmt.Errorf("xorb %s: range %s: %w", j.xorb, j.rng.Bytes.Header(), err)
	}
	for a, ti := range j.terms {
		if t := l.terms[ti]; cursor[a] != int64(t.UnpackedLength) {
			return fmt.Errorf("term %d (xorb %s chunks [%d, %d)): decoded %d bytes, plan says %d",
				ti, t.Hash, t.Range.Start, t.Range.End, cursor[a], t.UnpackedLength)
		}
	}
	return w.flush()
}

// fetcher opens the byte range of a job.
type fetcher func(ctx context.Context, j *job) (io.ReadCloser, error)
