package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Buffer sizes of a job: it reads its range readBuf bytes at a time and decodes compressed chunks
// straight into a writeBuf buffer, which it writes out (WriteAt) when full or when the output
// jumps. Both come from pools, so a download allocates no buffers per range; both are small enough
// that a chunk is still in the CPU cache when it is hashed and written.
const (
	readBuf  = 512 << 10
	writeBuf = 1 << 20
)

var (
	readPool  = sync.Pool{New: func() any { b := make([]byte, readBuf); return &b }}
	writePool = sync.Pool{New: func() any { b := make([]byte, writeBuf+directAlign); return &b }}
)

// sink is where jobs put their bytes: the temp file, the chunk hashes of the file (when the
// whole file is verified), the streaming SHA-256 (when asked for), and progress.
type sink struct {
	f        *os.File
	df       *os.File // f opened again with O_DIRECT; nil: everything goes through f
	l        *layout
	merkle   *merkleStream // the file hash, fed term by term; nil when not verifying
	sha      *shaStream    // nil when no SHA-256 is wanted
	mu       sync.Mutex
	done     int64
	reported int64
	report   func(int64)
}

// progressStep: progress is reported at most once per this many bytes (and at the end).
const progressStep = 1 << 20

func (s *sink) progress(n int64) {
	s.mu.Lock()
	s.done += n
	if s.report != nil && s.done-s.reported >= progressStep {
		s.reported = s.done
		s.report(s.done)
	}
	s.mu.Unlock()
}

// progressEnd reports the final count when it was not reported yet.
func (s *sink) progressEnd() {
	s.mu.Lock()
	if s.report != nil && s.done != s.reported {
		s.reported = s.done
		s.report(s.done)
	}
	s.mu.Unlock()
}

// write writes b at pos and passes it to the SHA-256 stream.
func (s *sink) write(pos int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := s.f.WriteAt(b, pos); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if s.sha != nil {
		if err := s.sha.written(pos, b); err != nil {
			return err
		}
	}
	s.progress(int64(len(b)))
	return nil
}

// writeDirect writes b (aligned: address, offset and length) at pos through the O_DIRECT
// descriptor, or through the page cache when the filesystem refuses it.
func (s *sink) writeDirect(pos int64, b []byte) error {
	if _, err := s.df.WriteAt(b, pos); err != nil {
		return s.write(pos, b) // rewriting the same bytes buffered is always right
	}
	if s.sha != nil {
		if err := s.sha.written(pos, b); err != nil {
			return err
		}
	}
	s.progress(int64(len(b)))
	return nil
}

// target is where one term puts a decoded chunk: bytes [lo, hi) of the chunk go to pos+lo.
type target struct {
	pos    int64
	lo, hi int
}

// run fetches j's range and writes the terms' bytes at their places: an uncompressed chunk is
// hashed and written from the read buffer where it lies; a compressed one is decoded straight into
// the write buffer (written out when full or when the output jumps) and hashed there. It checks the
// chunk count of the range and each term's decoded length.
func (j *job) run(ctx context.Context, get fetcher, s *sink) (err error) {
	rc, err := get(ctx, j)
	if err != nil {
		return err
	}
	defer rc.Close()
	rp := readPool.Get().(*[]byte)
	defer readPool.Put(rp)
	in := xorb.NewRecordScanner(rc, *rp, int64(j.rng.Bytes.Len()))
	wp := writePool.Get().(*[]byte)
	defer writePool.Put(wp)
	w := newRunBuf(s, *wp)

	hasher := hash.NewChunkHasher()
	l := s.l
	cursor := make([]int64, len(j.terms)) // bytes of each term decoded so far
	next, active := 0, make([]int, 0, 8)  // terms (positions in j.terms) containing the current chunk
	var targets []target
	var ents [][]hash.Entry // per term of j, per chunk: the entries for the file hash
	if s.merkle != nil {
		ents = make([][]hash.Entry, len(j.terms))
		for a, ti := range j.terms {
			ents[a] = make([]hash.Entry, l.terms[ti].Range.End-l.terms[ti].Range.Start)
		}
	}
	n := j.rng.Chunks.End - j.rng.Chunks.Start
	for k := uint32(0); k < n; k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		ci := j.rng.Chunks.Start + k
		rec, h, err := nextRecord(in)
		if err == io.EOF {
			return fmt.Errorf("xorb %s: range %s has %d chunks, plan says %d", j.xorb, j.rng.Bytes.Header(), k, n)
		}
		if err != nil {
			return fmt.Errorf("xorb %s range %s: chunk %d: %w", j.xorb, j.rng.Bytes.Header(), k, err)
		}
		size := int(h.RawLen)
		// Update the terms containing chunk ci, and where they want it.
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
		targets = targets[:0]
		for _, a := range active {
			ti := j.terms[a]
			t := l.terms[ti]
			pos := l.pos[ti] + cursor[a]
			cursor[a] += int64(size)
			if cursor[a] > int64(t.UnpackedLength) {
				return fmt.Errorf("term %d (xorb %s chunks [%d, %d)): decodes to more than its %d bytes",
					ti, t.Hash, t.Range.Start, t.Range.End, t.UnpackedLength)
			}
			lo, hi := int64(0), int64(size)
			if pos < 0 {
				lo = min(-pos, hi)
			}
			if pos+hi > l.size {
				hi = max(l.size-pos, lo)
			}
			if lo < hi {
				targets = append(targets, target{pos: pos, lo: int(lo), hi: int(hi)})
			}
		}
		// An uncompressed chunk is its payload: without direct I/O it is hashed and written where
		// it lies in the read buffer, with no copy. Other chunks are decoded into the run buffer,
		// right after the run when the first target continues it, else into a new run.
		var raw []byte
		if h.Scheme == xorb.SchemeNone && !w.direct {
			raw = rec[xorb.RecordHeaderSize:]
			if err := w.flush(true); err != nil {
				return err
			}
		} else {
			if !w.empty() && (len(targets) == 0 || targets[0].pos+int64(targets[0].lo) != w.next()) {
				if err := w.flush(true); err != nil {
					return err
				}
			}
			if w.room() < size {
				if err := w.flush(false); err != nil {
					return err
				}
			}
			if w.empty() && len(targets) > 0 {
				w.begin(targets[0].pos + int64(targets[0].lo))
			}
			dst := w.free()
			raw, _, _, err = xorb.DecodeRecord(dst, rec)
			if err != nil {
				return fmt.Errorf("xorb %s range %s: chunk %d: %w", j.xorb, j.rng.Bytes.Header(), k, err)
			}
			if len(raw) != size || (size > 0 && &raw[0] != &dst[:1][0]) {
				return fmt.Errorf("xorb %s: chunk %d decoded to %d bytes, header says %d", j.xorb, k, len(raw), size)
			}
		}
		if ents != nil && len(active) > 0 {
			e := hash.Entry{Hash: hasher.Sum(raw), Size: uint64(size)}
			for _, a := range active {
				ents[a][ci-l.terms[j.terms[a]].Range.Start] = e
			}
		}
		if len(targets) == 0 {
			continue
		}
		// A chunk used more than once in the output: the other places are written directly.
		for _, t := range targets[1:] {
			if err := s.write(t.pos+int64(t.lo), raw[t.lo:t.hi]); err != nil {
				return err
			}
		}
		t := targets[0]
		if h.Scheme == xorb.SchemeNone && !w.direct {
			if err := s.write(t.pos+int64(t.lo), raw[t.lo:t.hi]); err != nil {
				return err
			}
			continue
		}
		if t.lo > 0 {
			copy(raw, raw[t.lo:t.hi])
		}
		w.commit(t.hi - t.lo)
	}
	if _, _, err := nextRecord(in); err != io.EOF {
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
	if err := w.flush(true); err != nil {
		return err
	}
	for a, ti := range j.terms {
		if ents != nil {
			if err := s.merkle.done(ti, ents[a]); err != nil {
				return err
			}
		}
	}
	return nil
}

// nextRecord returns the next record of a fetched range; a range cut short on the way is marked
// retryable (the job fetches it again).
func nextRecord(in *xorb.RecordScanner) ([]byte, xorb.RecordHeader, error) {
	rec, h, err := in.Next()
	if errors.Is(err, xorb.ErrStreamShort) {
		err = retry.Mark(fmt.Errorf("fetched range: %w", err))
	}
	return rec, h, err
}

// fetcher opens the byte range of a job.
type fetcher func(ctx context.Context, j *job) (io.ReadCloser, error)
