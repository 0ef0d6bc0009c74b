package store

import (
	"context"
	"crypto/sha256"
	"encoding"
	"hash"
	"sync"
	"time"

	xhash "github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// The SHA-256 check of a registration (checkSHA256s) reads every new file back from its xorbs. On a
// server that writes xorbs with O_DIRECT that is a disk read of the whole push at its very end,
// while the clients wait. Our client says, with each xorb, where its raw bytes sit in a file
// (xorb.Follows); the store then hashes them as the xorb is validated, continuing the SHA-256 of
// the xorb it follows, and keeps the state. The check starts from the state of the longest run of
// the file's first terms that it covers, and reads only the rest.
//
// A state is used only for exactly the bytes it hashed: its id chains the hashes of the xorbs it
// went over (chainID), and a term counts only when it spans its whole xorb and the xorb's state
// has the id of the run so far. A wrong or stale hint costs a read, never a wrong answer.

// chainState is the SHA-256 state after the raw bytes of a run of xorbs, the last one keyed.
type chainState struct {
	id     xhash.Hash // chainID of the run
	chunks int        // the last xorb's chunk count
	state  []byte     // sha256 state (encoding.BinaryMarshaler)
}

// chainStates bounds the states kept: about 200 bytes each.
const chainStates = 4 << 20

// chainID names a run: the run named prev (zero: none) followed by xorb x.
func chainID(prev, x xhash.Hash) xhash.Hash {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(x[:])
	return xhash.Hash(h.Sum(nil))
}

// chainHasher returns the hasher to feed xorb x's raw bytes to under hint f, and the id of the run
// it extends; nil when the hint names nothing known.
func (s *Store) chainHasher(f xorb.Follows) (hash.Hash, xhash.Hash) {
	h := sha256.New()
	switch {
	case f.Start:
		return h, xhash.Hash{}
	case f.Prev != xhash.Hash{}:
		prev, ok := s.chains.get(f.Prev)
		if !ok || h.(encoding.BinaryUnmarshaler).UnmarshalBinary(prev.state) != nil {
			return nil, xhash.Hash{}
		}
		return h, prev.id
	}
	return nil, xhash.Hash{}
}

// keepChain records the state of a run ending with xorb x (validated, chunks chunks), and goes on
// with the xorbs that waited for it (chainWaits).
func (s *Store) keepChain(x xhash.Hash, prevID xhash.Hash, chunks int, h hash.Hash) {
	st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return
	}
	cs := &chainState{id: chainID(prevID, x), chunks: chunks, state: st}
	w := &s.waiting
	w.mu.Lock()
	s.chains.put(x, cs)
	next := w.by[x]
	delete(w.by, x)
	w.n -= len(next)
	w.mu.Unlock()
	for _, y := range next {
		s.extendLater(x, cs, y)
	}
}

// chainWaits are stored xorbs whose hint named a previous xorb whose state was not kept yet when
// they arrived: with several uploads in flight, a file's next xorb starts arriving before the one
// it follows is whole. When that state comes (keepChain), each waiting xorb is read back (from the
// page cache, as it was just written) and hashed onto it on a goroutine of its own, while the rest
// of the push is still arriving, instead of at the registration the client waits for.
type chainWaits struct {
	mu sync.Mutex
	by map[xhash.Hash][]waitingXorb // by the xorb they follow
	n  int
}

type waitingXorb struct {
	x      xhash.Hash
	chunks int
}

// maxChainWaits bounds the xorbs waiting (a hint naming a xorb that never comes is forgotten
// with the oldest); beyond it a xorb just waits for nothing, and its file is read at registration.
const maxChainWaits = 4096

// chainWait records that stored xorb x (chunks chunks) follows prev, whose state is not known
// (chainHasher found none), or goes on with it at once if the state came meanwhile.
func (s *Store) chainWait(prev, x xhash.Hash, chunks int) {
	w := &s.waiting
	w.mu.Lock()
	if st, ok := s.chains.get(prev); ok {
		w.mu.Unlock()
		s.extendLater(prev, st, waitingXorb{x, chunks})
		return
	}
	if w.n >= maxChainWaits {
		w.by, w.n = nil, 0
	}
	if w.by == nil {
		w.by = make(map[xhash.Hash][]waitingXorb)
	}
	w.by[prev] = append(w.by[prev], waitingXorb{x, chunks})
	w.n++
	w.mu.Unlock()
}

// chainWork runs the extensions of runs onto waiting xorbs (extendChain), at most maxChainWorkers
// at once: each reads a xorb through a 1 MiB buffer, and thousands of xorbs may wait for one state.
// The others wait in its queue (at most maxChainWaits; past that an extension is dropped, and its
// file is read at registration). Close stops the workers and waits for them.
type chainWork struct {
	mu      sync.Mutex
	queue   []chainJob
	running int
	stop    chan struct{} // closed by Close; nil until a worker starts
	wg      sync.WaitGroup
}

type chainJob struct {
	prev xhash.Hash
	st   *chainState
	y    waitingXorb
}

// maxChainWorkers bounds the extensions running at once.
const maxChainWorkers = 2

// extendLater queues the extension of the run ending with prev (state st) onto waiting xorb y, and
// starts a worker when fewer than maxChainWorkers run.
func (s *Store) extendLater(prev xhash.Hash, st *chainState, y waitingXorb) {
	w := &s.work
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) >= maxChainWaits {
		return
	}
	w.queue = append(w.queue, chainJob{prev, st, y})
	if w.running >= maxChainWorkers {
		return
	}
	if w.stop == nil {
		w.stop = make(chan struct{})
	}
	w.running++
	w.wg.Add(1)
	go s.chainWorker(w.stop)
}

// chainWorker runs queued extensions until the queue is empty or stop is closed.
func (s *Store) chainWorker(stop <-chan struct{}) {
	w := &s.work
	defer w.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.wg.Add(1) // the worker holds one: Close waits for this one too
	go func() { // ends with the worker (cancel) or at Close
		defer w.wg.Done()
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		w.mu.Lock()
		if len(w.queue) == 0 || ctx.Err() != nil {
			w.running--
			w.mu.Unlock()
			return
		}
		j := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		s.extendChain(ctx, j.prev, j.st, j.y)
	}
}

// stopChains stops the extension workers, drops what they had queued and waits for them.
func (s *Store) stopChains() {
	w := &s.work
	w.mu.Lock()
	if w.stop != nil {
		close(w.stop)
		w.stop = nil
	}
	w.queue = nil
	w.mu.Unlock()
	w.wg.Wait()
}

// extendChain hashes stored xorb y's raw bytes onto the state st of the run ending with prev and
// keeps the result (which in turn goes on with the xorbs waiting for y). A failure keeps nothing:
// the file is then read at registration, as without hints.
func (s *Store) extendChain(ctx context.Context, prev xhash.Hash, st *chainState, y waitingXorb) {
	h := sha256.New()
	if h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st.state) != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, err := s.hashTerm(ctx, h, fileTerm{Xorb: y.x, Start: 0, End: uint32(y.chunks)}, nil); err != nil {
		s.log.Debug().Err(err).Str("xorb", y.x.String()).Msg("sha256 run not extended")
		return
	}
	s.keepChain(y.x, st.id, y.chunks, h)
}

// chainPrefix returns a SHA-256 hasher holding the state after the longest run of rec's first
// terms that kept states cover, and how many terms that is (0: a fresh hasher).
func (s *Store) chainPrefix(rec *fileRecord) (hash.Hash, int) {
	h := sha256.New()
	var id xhash.Hash
	var last *chainState
	n := 0
	for _, t := range rec.Terms {
		st, ok := s.chains.get(t.Xorb)
		if !ok || t.Start != 0 || int(t.End) != st.chunks || st.id != chainID(id, t.Xorb) {
			break
		}
		id, last, n = st.id, st, n+1
	}
	if last == nil || h.(encoding.BinaryUnmarshaler).UnmarshalBinary(last.state) != nil {
		return sha256.New(), 0
	}
	return h, n
}
