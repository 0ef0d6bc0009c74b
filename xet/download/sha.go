package download

import (
	"crypto/sha256"
	"errors"
	"fmt"
	gohash "hash"
	"io"
	"os"
	"sort"
	"sync"
)

// shaStream computes the SHA-256 of the output on a goroutine of its own, in file order, while
// the jobs write their ranges concurrently and out of order. A write that continues the written
// prefix is copied (a memmove, far cheaper than hashing it) into a pooled buffer and queued for the hasher; a write
// past it is only noted, and read back from the file (the page cache) once the prefix reaches it.
// So SHA-256, a serial stream, runs beside the jobs' decoding and chunk hashing instead of in
// turn with them, and jobs run in file order, so little is read back. The queue holds at most
// shaQueue buffers: a hasher that falls behind slows the writers down, and memory stays bounded.
//
// Concurrency: written, finish and stop may be called from any goroutine; the queue is filled
// under the mutex, which keeps it in file order.
type shaStream struct {
	f    *os.File
	h    gohash.Hash
	q    chan shaItem
	done chan struct{}
	err  error // the hasher's; read after done

	mu      sync.Mutex
	ready   int64      // [0, ready) is written and queued
	pending [][2]int64 // written ranges past ready: [start, end)
	ahead   int64      // bytes of pending (a range written twice counts twice)
	most    int64      // the largest ahead has been
	closed  bool
}

// shaItem is the next stretch of the file: bytes in buf (pooled), or [from, to) to read back.
type shaItem struct {
	buf      *[]byte
	n        int
	from, to int64
}

const (
	shaBuf   = 1 << 20
	shaQueue = 8
)

var shaPool = sync.Pool{New: func() any { b := make([]byte, shaBuf); return &b }}

func newSHAStream(f *os.File) *shaStream {
	s := &shaStream{f: f, h: sha256.New(), q: make(chan shaItem, shaQueue), done: make(chan struct{})}
	go s.run()
	return s
}

// written records that b was written at pos.
func (s *shaStream) written(pos int64, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStopped
	}
	end := pos + int64(len(b))
	if end <= s.ready {
		return nil // a retried range rewriting written bytes
	}
	if pos > s.ready {
		s.pending = append(s.pending, [2]int64{pos, end})
		s.ahead += end - pos
		s.most = max(s.most, s.ahead)
		return nil
	}
	for rest := b[s.ready-pos:]; len(rest) > 0; {
		bp := shaPool.Get().(*[]byte)
		n := copy(*bp, rest)
		s.q <- shaItem{buf: bp, n: n}
		rest = rest[n:]
	}
	s.ready = end
	sort.Slice(s.pending, func(a, b int) bool { return s.pending[a][0] < s.pending[b][0] })
	k := 0
	for ; k < len(s.pending) && s.pending[k][0] <= s.ready; k++ {
		s.ahead -= s.pending[k][1] - s.pending[k][0]
		if e := s.pending[k][1]; e > s.ready {
			s.q <- shaItem{from: s.ready, to: e}
			s.ready = e
		}
	}
	s.pending = s.pending[k:]
	return nil
}

// behind returns the most bytes that were written past the in-order prefix at one time: what the
// hasher had to read back from the file at once when the prefix reached them. A download that
// writes the file front to back keeps it near the bytes in flight; one whose first range ends last
// leaves nearly the whole file to read back and hash after the last byte arrived.
func (s *shaStream) behind() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

// run hashes the queue in order; after an error it only drains it.
func (s *shaStream) run() {
	defer close(s.done)
	var back []byte
	for it := range s.q {
		if it.buf != nil {
			if s.err == nil {
				s.h.Write((*it.buf)[:it.n])
			}
			shaPool.Put(it.buf)
			continue
		}
		if s.err != nil {
			continue
		}
		if back == nil {
			back = make([]byte, shaBuf)
		}
		for from := it.from; from < it.to; {
			n := int(min(int64(len(back)), it.to-from))
			if _, err := s.f.ReadAt(back[:n], from); err != nil && err != io.EOF {
				s.err = fmt.Errorf("read back for SHA-256: %w", err)
				break
			}
			s.h.Write(back[:n])
			from += int64(n)
		}
	}
}

// close ends the queue (once) and waits for the hasher.
func (s *shaStream) close() (ready int64) {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.q)
	}
	ready = s.ready
	s.mu.Unlock()
	<-s.done
	return ready
}

// finish waits for the hasher to hash everything written (size bytes, every byte written by now)
// and returns the digest.
func (s *shaStream) finish(size int64) ([32]byte, error) {
	var sum [32]byte
	if ready := s.close(); ready != size {
		return sum, fmt.Errorf("SHA-256 stream: %d of %d bytes written in order", ready, size)
	}
	if s.err != nil {
		return sum, s.err
	}
	s.h.Sum(sum[:0])
	return sum, nil
}

// stop ends the hasher without a result (the download failed); safe after finish.
func (s *shaStream) stop() { s.close() }

var errStopped = errors.New("SHA-256 stream stopped")
