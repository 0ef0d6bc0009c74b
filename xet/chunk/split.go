package chunk

import (
	"fmt"
	"io"
)

// produce is the first stage of a Reader: it reads blocks, sends each to the SHA-256 stage (when
// shaIn is not nil), cuts it into chunks and sends the batch to the hashing stage. Its last batch
// has err set (io.EOF or the read error); before sending it at io.EOF it waits for the SHA-256. It
// returns early when done is closed, at the latest when a Read in progress returns; after that it
// touches no batch that Close may have recycled (it only drops the one it was reading into).
func (r *Reader) produce(toHash chan<- *batch, shaIn chan<- *batch, shaOut <-chan [32]byte) {
	defer func() {
		if shaIn != nil {
			close(shaIn) // lets the SHA-256 goroutine finish
		}
	}()
	carry := make([]byte, 0, MaxSize) // the tail of the previous block: a chunk without its end yet
	var off int64                     // stream offset of carry[0] (or of the next block when carry is empty)
	allocated := 0
	for {
		var b *batch
		select {
		case b = <-r.free:
		default:
			if allocated < nBatches {
				allocated++
				b = batchPool.Get().(*batch)
			} else {
				select {
				case b = <-r.free:
				case <-r.done:
					return
				}
			}
		}
		b.chunks, b.spill, b.err = b.chunks[:0], b.spill[:0], nil
		n, rerr := readFull(r.src, b.buf)
		select {
		case <-r.done: // closed while reading
			return
		default:
		}
		b.n = n
		final := rerr != nil
		if rerr != nil && rerr != io.EOF {
			rerr = fmt.Errorf("chunk: reading input: %w", rerr)
		}
		refs := int32(1)
		if shaIn != nil && n > 0 {
			refs = 2
		}
		b.refs.Store(refs)
		if refs == 2 {
			select {
			case shaIn <- b:
			case <-r.done:
				return
			}
		}

		data := b.buf[:n]
		eof := rerr == io.EOF
		emit := func(c []byte) {
			b.chunks = append(b.chunks, Chunk{Data: c, Offset: off})
			off += int64(len(c))
		}
		pos := 0
		if len(carry) > 0 {
			// The chunk begun in the previous block ends in this one: blocks are >= MaxSize, so
			// nextFrom finds its end unless the stream stops first.
			// Copy the block's head in steps, so that only about what the chunk needs is copied.
			take := min(n, MaxSize-len(carry))
			b.spill = append(b.spill, carry...)
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
			if k > 0 {
				emit(b.spill[:k])
				pos = k - len(carry)
			} else {
				pos = n // read error inside the chunk: it is not complete
			}
			carry = carry[:0]
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
			carry = append(carry, data[pos:]...)
		}
		if final {
			b.err = rerr
			if shaIn != nil && rerr == io.EOF {
				close(shaIn)
				shaIn = nil
				select {
				case r.sum = <-shaOut:
					r.sumOK = true
				case <-r.done:
					return
				}
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
