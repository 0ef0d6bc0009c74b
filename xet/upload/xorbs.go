package upload

import (
	"context"
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// sxorb is a xorb made in this session, from its first chunk until it is stored. While open it has
// a builder; when cut it has its hash. When its chunks were moved into another open xorb (the
// aggregation of small files), merged points there and offset says where its chunk 0 went. Terms
// keep pointing at the sxorb they were made with and are resolved (patched) when the shard is built.
//
// Concurrency: sxorbs belong to the session's Upload/Finish goroutine; the upload goroutines only
// see the *xorb.Xorb cut from them.
type sxorb struct {
	b      *xorb.Builder
	chunks []hash.Entry // chunk hashes and raw lengths in xorb order (grows while open)
	raw    uint64
	cut    bool
	hash   hash.Hash
	merged *sxorb
	offset uint32
}

// resolve returns the xorb holding x's chunks and the index of x's chunk 0 in it.
func (x *sxorb) resolve() (*sxorb, uint32) {
	var off uint32
	for x.merged != nil {
		off += x.offset
		x = x.merged
	}
	return x, off
}

func (s *Session) newSxorb() *sxorb {
	x := &sxorb{b: xorb.NewBuilder(s.cfg.Policy)}
	x.b.StartFile()
	return x
}

// add appends a new chunk to open xorb x and returns its index.
func (x *sxorb) add(data []byte, h hash.Hash) uint32 {
	i := x.b.Add(data, h)
	x.chunks = append(x.chunks, hash.Entry{Hash: h, Size: uint64(len(data))})
	x.raw += uint64(len(data))
	return uint32(i)
}

func (x *sxorb) fits(n int) bool { return x.b.Fits(n) }

// mergeInto moves the chunks of open xorb src into open xorb dst (decoding src's records and
// adding them to dst's builder) and leaves src pointing at dst.
func mergeInto(dst, src *sxorb) error {
	built := src.b.Finish()
	src.b = nil
	dst.b.StartFile()
	off := uint32(len(dst.chunks))
	err := xorb.DecodeRecords(built.Body, func(i int, raw []byte) error {
		if i >= len(built.Chunks) {
			return fmt.Errorf("merge xorbs: record %d beyond %d chunks", i, len(built.Chunks))
		}
		dst.b.Add(raw, built.Chunks[i].Hash)
		return nil
	})
	if err != nil {
		return fmt.Errorf("merge xorbs: %w", err)
	}
	dst.chunks = append(dst.chunks, src.chunks...)
	dst.raw += src.raw
	src.merged, src.offset, src.chunks = dst, off, nil
	return nil
}

// cut finishes open xorb x, records it for the shard and starts its upload. It blocks while
// Concurrency uploads are in flight (so at most Concurrency+1 cut xorbs are in memory).
func (s *Session) cut(ctx context.Context, x *sxorb) error {
	if x.cut || x.b == nil || x.b.Len() == 0 {
		return nil
	}
	built := x.b.Finish()
	x.b, x.cut, x.hash = nil, true, built.Hash
	sx := shard.Xorb{Hash: built.Hash, BytesInXorb: uint32(built.RawBytes), Chunks: make([]shard.XorbChunk, len(built.Chunks))}
	for i, c := range built.Chunks {
		sx.Chunks[i] = shard.XorbChunk{Hash: c.Hash, RawStart: uint32(c.RawStart), RawLen: c.RawLen}
	}
	s.newXorbs = append(s.newXorbs, sx)
	s.stats.xorbs++
	if err := s.batchErr(); err != nil {
		return err
	}
	g, gctx := s.group()
	s.log.Debug().Str("xorb", built.Hash.String()).Int("chunks", len(built.Chunks)).Uint64("raw", built.RawBytes).
		Int("bytes", len(built.Body)).Msg("upload: xorb cut")
	g.Go(func() error {
		if _, err := s.cfg.CAS.PutXorb(gctx, built.Hash, built.Body); err != nil {
			return fmt.Errorf("upload xorb %s: %w", built.Hash, err)
		}
		return nil
	})
	return ctx.Err()
}

// fileDone applies xet-core's aggregation rule to the leftover open xorb of a file: merged with the
// session accumulator when both fit in one xorb, otherwise the larger is uploaded and the smaller
// kept as the accumulator.
func (s *Session) fileDone(ctx context.Context, leftover *sxorb) error {
	if leftover == nil || leftover.cut || len(leftover.chunks) == 0 {
		return nil
	}
	acc := s.acc
	switch {
	case acc == nil:
		s.acc = leftover
		return nil
	case acc.raw+leftover.raw <= xorb.MaxBytes && len(acc.chunks)+len(leftover.chunks) <= xorb.MaxChunks:
		// Re-add the smaller one's chunks into the larger one's builder (cheaper); the order
		// inside a xorb does not matter to anyone.
		big, small := acc, leftover
		if small.raw > big.raw {
			big, small = small, big
		}
		if err := mergeInto(big, small); err != nil {
			return err
		}
		s.acc = big
		return nil
	default:
		big, small := acc, leftover
		if small.raw > big.raw {
			big, small = small, big
		}
		s.acc = small
		return s.cut(ctx, big)
	}
}
