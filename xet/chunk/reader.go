package chunk

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Chunk is one chunk of a stream. Data is valid only until the next Reader.Next or Reader.Close
// call. Offset is the chunk's position in the stream.
type Chunk struct {
	Data   []byte
	Hash   hash.Hash
	Offset int64
}

// ErrClosed is returned by Reader.Next after Reader.Close.
var ErrClosed = errors.New("chunk: reader closed")

// Options tunes a Reader.
type Options struct {
	// SHA256 computes the SHA-256 of the whole stream on its own goroutine, beside the chunker;
	// Reader.SHA256 returns it once Next has returned io.EOF.
	SHA256 bool
}

const (
	blockSize = 256 << 10 // bytes read from the source at a time; >= MaxSize
	spillStep = 16 << 10  // bytes of a block copied at a time to complete a chunk begun in the previous one
	nBatches  = 6         // blocks in flight per Reader (reading, hashing, SHA-256, consumer, queues)
)

// batch is one block of the stream with its chunks, handed from the producer to the consumer.
// The chunk that straddles the previous block and this one lives in spill.
type batch struct {
	buf    []byte // the block, blockSize long; buf[:n] holds data
	n      int
	spill  []byte
	chunks []Chunk
	err    error // io.EOF or a read error after the chunks; nil otherwise
	refs   atomic.Int32
}

var batchPool = sync.Pool{New: func() any {
	return &batch{buf: make([]byte, blockSize), spill: make([]byte, 0, MaxSize)}
}}

// Reader splits a stream into content-defined chunks and hashes them.
//
// The first Next reads the first block itself: a stream that ends within it (every small file) is
// cut and hashed right there, without goroutines, whose hand-offs would cost more than the work.
//
// Concurrency: otherwise the first Next starts a pipeline that works up to nBatches blocks (256 KiB each,
// 1.5 MiB in all) ahead of the caller: one goroutine reads the source and finds the boundaries,
// a second computes the chunk hashes, and with Options.SHA256 a third computes the stream's SHA-256
// beside them. Next and Close must be called from one goroutine at a time. A caller that stops
// early must call Close; one that reads to io.EOF should still call it to recycle the buffers.
// Close stops the pipeline and waits for it, except for a Read of the source in progress: Close
// does not wait for that Read (which may block, e.g. on a network body that only unblocks once the
// caller returns); the reading goroutine ends as soon as it returns, touching nothing else. So after
// Close the source sees at most that one Read, into the Reader's own buffer.
//
// Boundaries never depend on how the source splits its reads.
type Reader struct {
	src  io.Reader
	opts Options

	out     chan *batch    // hashed batches for the consumer
	free    chan *batch    // released batches back to the producer
	done    chan struct{}  // closed by Close
	wg      sync.WaitGroup // the hashing and SHA-256 goroutines
	reading chan struct{}  // closed when the reading goroutine has returned
	started bool
	closed  bool

	cur *batch
	idx int
	err error // sticky: io.EOF, a read error or ErrClosed

	sum   [32]byte // SHA-256 of the stream, set by the producer before the last batch
	sumOK bool

	first   *batch // the first block, read by Next, when the stream did not end in it
	inlined bool   // the stream fit in its first block, cut and hashed by Next itself
}

// NewReader returns a Reader of r's chunks. It starts nothing until the first Next.
func NewReader(r io.Reader) *Reader { return NewReaderOptions(r, Options{}) }

// NewReaderOptions is NewReader with options.
func NewReaderOptions(r io.Reader, o Options) *Reader {
	return &Reader{src: r, opts: o}
}

// Next returns the next chunk, or io.EOF after the last one. A read error of the source is returned
// (wrapped) after the chunks that were complete before it.
func (r *Reader) Next() (Chunk, error) {
	for {
		if r.cur != nil {
			if r.idx < len(r.cur.chunks) {
				c := r.cur.chunks[r.idx]
				r.idx++
				return c, nil
			}
			if r.cur.err != nil {
				r.err = r.cur.err
			}
			r.release(r.cur)
			r.cur = nil
		}
		if r.err != nil {
			return Chunk{}, r.err
		}
		if !r.started {
			if r.inline() {
				continue
			}
			r.start()
		}
		r.cur = <-r.out // the producer always ends with a batch that has err set
		r.idx = 0
	}
}

// SHA256 returns the SHA-256 of the whole stream, with ok true once Next has returned io.EOF on a
// Reader made with Options.SHA256.
func (r *Reader) SHA256() (sum [32]byte, ok bool) {
	if r.err != io.EOF || !r.sumOK {
		return sum, false
	}
	return r.sum, true
}

// Close stops the goroutines, waits for them (not for a Read in progress, see Reader) and recycles
// the buffers. Chunk data from this Reader is invalid afterwards. It is safe to call more than once.
func (r *Reader) Close() {
	if r.closed {
		return
	}
	r.closed = true
	if r.err == nil {
		r.err = ErrClosed
	}
	if r.first != nil {
		batchPool.Put(r.first)
		r.first = nil
	}
	if !r.started {
		return
	}
	if r.inlined {
		if r.cur != nil {
			batchPool.Put(r.cur)
			r.cur = nil
		}
		return
	}
	close(r.done)
	r.wg.Wait()
	// The hashing and SHA-256 goroutines have stopped; the reading one, if still in a Read, will not
	// take batches from cur or out, and a batch in free goes to it or to the pool, never both.
	// Reference counts are reset when a batch is reused.
	if r.cur != nil {
		batchPool.Put(r.cur)
		r.cur = nil
	}
	for {
		select {
		case b := <-r.out:
			batchPool.Put(b)
		case b := <-r.free:
			batchPool.Put(b)
		default:
			return
		}
	}
}

func (r *Reader) start() {
	r.started = true
	r.out = make(chan *batch, nBatches)
	r.free = make(chan *batch, nBatches)
	r.done = make(chan struct{})
	var shaIn chan *batch
	var shaOut chan [32]byte
	if r.opts.SHA256 {
		shaIn = make(chan *batch, nBatches)
		shaOut = make(chan [32]byte, 1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.sha(shaIn, shaOut)
		}()
	}
	toHash := make(chan *batch, nBatches)
	r.reading = make(chan struct{})
	first := r.first
	r.first = nil
	go func() {
		defer close(r.reading)
		r.produce(first, toHash, shaIn, shaOut)
	}()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.hash(toHash)
	}()
}

// release drops one reference to b; the last one returns it to the producer. free has room for
// every batch, so this never blocks.
func (r *Reader) release(b *batch) {
	if r.inlined {
		batchPool.Put(b)
		return
	}
	if b.refs.Add(-1) == 0 {
		r.free <- b
	}
}

// inline reads the first block on the caller's goroutine. When the stream ends within it, the
// block is cut and hashed here and becomes the current batch (true); otherwise it is kept for the
// pipeline's producer (false).
func (r *Reader) inline() bool {
	b := batchPool.Get().(*batch)
	b.chunks, b.spill, b.err = b.chunks[:0], b.spill[:0], nil
	n, rerr := readFull(r.src, b.buf)
	b.n = n
	if rerr == nil {
		r.first = b
		return false
	}
	r.started, r.inlined = true, true
	b.refs.Store(1)
	if rerr != io.EOF {
		rerr = fmt.Errorf("chunk: reading input: %w", rerr)
	}
	p := producer{r: r}
	p.cut(b, n, rerr == io.EOF, true)
	for i := range b.chunks {
		b.chunks[i].Hash = hash.Chunk(b.chunks[i].Data) // pooled hashers: a small file has few chunks
	}
	if r.opts.SHA256 && rerr == io.EOF {
		r.sum, r.sumOK = sha256.Sum256(b.buf[:n]), true
	}
	b.err = rerr
	r.cur, r.idx = b, 0
	return true
}
