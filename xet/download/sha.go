package download

import (
	"crypto/sha256"
	"fmt"
	gohash "hash"
	"io"
	"os"
	"sort"
	"sync"
)

// shaStream computes the SHA-256 of the output as it is written, in file order, although the jobs
// write their ranges concurrently and out of order: a write at the frontier (the end of what is
// hashed) is hashed from the job's buffer at once; a write beyond it is only noted, and read back
// from the file (the page cache) once the frontier reaches it. Jobs run in file order, so most
// bytes are hashed from the buffers; memory stays a 1 MiB read-back buffer.
//
// Concurrency: written and finish may be called from any goroutine; a mutex serialises them (the
// hashing of one buffer holds it).
type shaStream struct {
	mu      sync.Mutex
	f       *os.File
	h       gohash.Hash
	next    int64      // bytes hashed: the frontier
	pending [][2]int64 // written but not hashed: [start, end) ranges past the frontier
	buf     []byte
}

func newSHAStream(f *os.File) *shaStream { return &shaStream{f: f, h: sha256.New()} }

// written records that b was written at pos.
func (s *shaStream) written(pos int64, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := pos + int64(len(b))
	if end <= s.next {
		return nil // a retried range rewriting hashed bytes
	}
	if pos > s.next {
		s.pending = append(s.pending, [2]int64{pos, end})
		return nil
	}
	s.h.Write(b[s.next-pos:])
	s.next = end
	return s.catchUp(-1)
}

// catchUp hashes the pending ranges that the frontier has reached, reading them back from the
// file; with upTo >= 0 it reads everything up to there (all of it written by then).
func (s *shaStream) catchUp(upTo int64) error {
	for {
		end := s.next
		if upTo > end {
			end = upTo
		}
		sort.Slice(s.pending, func(a, b int) bool { return s.pending[a][0] < s.pending[b][0] })
		k := 0
		for ; k < len(s.pending) && s.pending[k][0] <= end; k++ {
			end = max(end, s.pending[k][1])
		}
		s.pending = s.pending[k:]
		if end <= s.next {
			return nil
		}
		if err := s.readBack(s.next, end); err != nil {
			return err
		}
		if upTo < 0 || s.next >= upTo {
			if len(s.pending) == 0 || s.pending[0][0] > s.next {
				return nil
			}
		}
	}
}

func (s *shaStream) readBack(from, to int64) error {
	if s.buf == nil {
		s.buf = make([]byte, 1<<20)
	}
	for from < to {
		n := int(min(int64(len(s.buf)), to-from))
		if _, err := s.f.ReadAt(s.buf[:n], from); err != nil && err != io.EOF {
			return fmt.Errorf("read back for SHA-256: %w", err)
		}
		s.h.Write(s.buf[:n])
		from += int64(n)
		s.next = from
	}
	return nil
}

// finish hashes whatever is left up to size (every byte written by now) and returns the digest.
func (s *shaStream) finish(size int64) ([32]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum [32]byte
	if err := s.catchUp(size); err != nil {
		return sum, err
	}
	if s.next != size {
		return sum, fmt.Errorf("SHA-256 stream stopped at %d of %d bytes", s.next, size)
	}
	s.h.Sum(sum[:0])
	return sum, nil
}
