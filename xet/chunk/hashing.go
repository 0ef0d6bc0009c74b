package chunk

import (
	"crypto/sha256"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// hash computes the chunk hashes of the batches from in and passes them on to the consumer, until
// the last batch (err set) or done.
func (r *Reader) hash(in <-chan *batch) {
	hasher := hash.NewChunkHasher()
	for {
		var b *batch
		select {
		case b = <-in:
		case <-r.done:
			return
		}
		for i := range b.chunks {
			b.chunks[i].Hash = hasher.Sum(b.chunks[i].Data)
		}
		last := b.err != nil // b belongs to the consumer once sent
		select {
		case r.out <- b:
		case <-r.done:
			return
		}
		if last {
			return
		}
	}
}

// sha hashes the blocks sent on in, in order, and sends the digest on out when in is closed.
func (r *Reader) sha(in <-chan *batch, out chan<- [32]byte) {
	d := sha256.New()
	for {
		select {
		case b, ok := <-in:
			if !ok {
				var sum [32]byte
				d.Sum(sum[:0])
				out <- sum // buffered
				return
			}
			d.Write(b.buf[:b.n])
			r.release(b)
		case <-r.done:
			return
		}
	}
}
