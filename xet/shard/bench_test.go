package shard

import (
	"encoding/binary"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// benchShard builds a sorted shard of 10 xorbs × 1000 chunks (10,000 chunks) and 100 files of 10
// terms each, the size of a busy upload session.
func benchShard(b *testing.B) *Shard {
	b.Helper()
	s := &Shard{}
	var seed [8]byte
	for x := 0; x < 10; x++ {
		xo := Xorb{}
		var start uint32
		for c := 0; c < 1000; c++ {
			binary.LittleEndian.PutUint64(seed[:], uint64(x*1000+c))
			xo.Chunks = append(xo.Chunks, XorbChunk{Hash: hash.Chunk(seed[:]), RawStart: start, RawLen: 65536})
			start += 65536
		}
		xo.BytesInXorb = start
		xo.Hash = hash.Chunk([]byte{'x', byte(x)})
		s.Xorbs = append(s.Xorbs, xo)
	}
	for f := 0; f < 100; f++ {
		var terms []Term
		var hs []hash.Hash
		for t := 0; t < 10; t++ {
			xo := &s.Xorbs[(f+t)%10]
			st := uint32((f*7 + t*13) % 990)
			terms = append(terms, Term{Xorb: xo.Hash, UnpackedBytes: 10 * 65536, ChunkStart: st, ChunkEnd: st + 10})
			for c := st; c < st+10; c++ {
				hs = append(hs, xo.Chunks[c].Hash)
			}
		}
		s.Files = append(s.Files, NewFile(hash.Chunk([]byte{'f', byte(f)}), terms, hs, [32]byte{byte(f)}))
	}
	s.Sort()
	return s
}

func BenchmarkParse(b *testing.B) {
	data := benchShard(b).AppendLocal(nil, 1, 2)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendLocal(b *testing.B) {
	s := benchShard(b)
	buf := s.AppendLocal(nil, 1, 2)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = s.AppendLocal(buf[:0], 1, 2)
	}
}

func BenchmarkAppendUpload(b *testing.B) {
	s := benchShard(b)
	buf := s.AppendUpload(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = s.AppendUpload(buf[:0])
	}
}

func BenchmarkFindChunk(b *testing.B) {
	s, err := Parse(benchShard(b).AppendLocal(nil, 1, 2))
	if err != nil {
		b.Fatal(err)
	}
	h := s.Xorbs[7].Chunks[500].Hash
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := s.FindChunk(h); !ok {
			b.Fatal("not found")
		}
	}
}
