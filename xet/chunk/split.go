package chunk

import (
	"fmt"
	"io"
)

// produce is the first stage of a Reader: it reads blocks, sends each to the SHA-256 stage (when
// shaIn is not nil), cuts it into chunks and sends the batch to the hashing stage. Its last batch
// has err set (io.EOF or the read error); before sending it at io.EOF it waits for the SHA-256. It
// returns early when done is closed, at the latest when a Read in progress returns; after that it
// touches no batch that Close may have recycled (it only drops the one it was reading into). first,
// when not nil, is the stream's first block, read whole by Next (see Reader.inline).
func (r *Reader) produce(first *batch, toHash chan<- *batch, shaIn chan<- *batch, shaOut <-chan [32]byte) {
	p := producer{r: r, shaIn: shaIn, carry: make([]byte, 0, MaxSize)}
	defer func() {
		if p.shaIn != nil {
			close(p.shaIn) // lets the SHA-256 goroutine finish
		}
	}()
	for {
		var b *batch
		var n int
		var rerr error
		if first != nil { // read by Next: a whole block, the stream goes on
			b, n, first = first, first.n, nil
			p.allocated++
		} else {
			var ok bool
			if b, ok = p.nextBatch(); !ok {
				return
			}
			n, rerr = readFull(r.src, b.buf)
			if r.isDone() { // closed while reading
				return
			}
		}
		final := rerr != nil
		if rerr != nil && rerr != io.EOF {
			rerr = fmt.Errorf("chunk: reading input: %w", rerr)
		}
		if !p.toSHA(b, n) {
			return
		}
		p.cut(b, n, rerr == io.EOF, final)
		if final {
			b.err = rerr
			if p.shaIn != nil && rerr == io.EOF && !p.awaitSHA(shaOut) {
				return
			}
		}
		select {
		case toHash <- b:
		case <-r.done:
			return
		}
		if final {
			return
		}
	}
}

// producer is the state of produce across blocks.
type producer struct {
	r         *Reader
	shaIn     chan<- *batch // nil once closed, or when no SHA-256 is wanted
	carry     []byte        // the tail of the previous block: a chunk without its end yet
	off       int64         // stream offset of carry[0] (or of the next block when carry is empty)
	allocated int           // batches taken from the pool
}

// isDone reports whether the Reader was closed.
func (r *Reader) isDone() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// nextBatch returns a batch to read into: a recycled one, a new one while fewer than nBatches are
// out, or else the next one recycled. false when the Reader was closed meanwhile.
func (p *producer) nextBatch() (*batch, bool) {
	var b *batch
	select {
	case b = <-p.r.free:
	default:
		if p.allocated < nBatches {
			p.allocated++
			b = batchPool.Get().(*batch)
		} else {
			select {
			case b = <-p.r.free:
			case <-p.r.done:
				return nil, false
			}
		}
	}
	b.chunks, b.spill, b.err = b.chunks[:0], b.spill[:0], nil
	return b, true
}

// toSHA records that b holds n bytes and passes it to the SHA-256 stage too, if any (b then has two
// references). false when the Reader was closed meanwhile.
func (p *producer) toSHA(b *batch, n int) bool {
	b.n = n
	if p.shaIn == nil || n == 0 {
		b.refs.Store(1)
		return true
	}
	b.refs.Store(2)
	select {
	case p.shaIn <- b:
		return true
	case <-p.r.done:
		return false
	}
}

// awaitSHA closes the SHA-256 stage's input and waits for the digest. false when the Reader was
// closed meanwhile.
func (p *producer) awaitSHA(shaOut <-chan [32]byte) bool {
	close(p.shaIn)
	p.shaIn = nil
	select {
	case p.r.sum = <-shaOut:
		p.r.sumOK = true
		return true
	case <-p.r.done:
		return false
	}
}

// cut cuts the n bytes of b into chunks (b.chunks): first the chunk carried over from the previous
// block, then the block's own; the unfinished tail is carried to the next block, unless this block
// is the last (final; at eof the tail is the stream's last chunk).
func (p *producer) cut(b *batch, n int, eof, final bool) {
	data := b.buf[:n]
	emit := func(c []byte) {
		b.chunks = append(b.chunks, Chunk{Data: c, Offset: p.off})
		p.off += int64(len(c))
	}
	pos := 0
	if len(p.carry) > 0 {
		pos = p.finishCarried(b, data, eof, emit)
	}
	for pos < n {
		k := Next(data[pos:])
		if k == 0 {
			if !eof {
				break
			}
			k = n - pos // last chunk of the stream
		}
		emit(data[pos : pos+k])
		pos += k
	}
	if !final {
		p.carry = append(p.carry, data[pos:]...)
	}
}

// finishCarried ends the chunk begun in the previous block with the head of data, in b.spill, and
// returns where the block's own chunks start. Blocks are >= MaxSize, so nextFrom finds its end
// unless the stream stops first. The block's head is copied in steps, so that only about what the
// chunk needs is copied.
func (p *producer) finishCarried(b *batch, data []byte, eof bool, emit func([]byte)) int {
	n := len(data)
	take := min(n, MaxSize-len(p.carry))
	b.spill = append(b.spill, p.carry...)
	k, taken := 0, 0
	for {
		done := len(b.spill)
		step := min(take-taken, spillStep)
		b.spill = append(b.spill, data[taken:taken+step]...)
		taken += step
		if k = nextFrom(b.spill, done); k > 0 || taken == take {
			break
		}
	}
	if k == 0 && eof {
		k = len(b.spill) // the stream ends inside this chunk
	}
	pos := n // read error inside the chunk: it is not complete
	if k > 0 {
		emit(b.spill[:k])
		pos = k - len(p.carry)
	}
	p.carry = p.carry[:0]
	return pos
}

// readFull reads into buf until it is full (nil error), the source ends (io.EOF) or fails (its
// error). A source that keeps returning 0 bytes without an error gets io.ErrNoProgress.
func readFull(src io.Reader, buf []byte) (int, error) {
	n := 0
	empty := 0
	for n < len(buf) {
		k, err := src.Read(buf[n:])
		if k < 0 || k > len(buf)-n {
			return n, fmt.Errorf("invalid count %d from Read", k)
		}
		n += k
		if err != nil {
			return n, err
		}
		if k == 0 {
			if empty++; empty >= 100 {
				return n, io.ErrNoProgress
			}
		} else {
			empty = 0
		}
	}
	return n, nil
}
