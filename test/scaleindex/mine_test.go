package main

import (
	"encoding/binary"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// indexed reports whether the store indexes chunk (file, counter), by the real chunk hash.
func indexed(file, counter uint64) bool {
	var d [chunkBytes]byte
	binary.LittleEndian.PutUint64(d[:], file)
	binary.LittleEndian.PutUint64(d[8:], counter)
	return hash.Chunk(d[:]).Mod(store.DedupeModulus) == 0
}

// TestMineFindsTheFirstIndexedChunk checks mine against hash.Chunk: what it returns is indexed,
// and no counter before it is.
func TestMineFindsTheFirstIndexedChunk(t *testing.T) {
	for _, file := range []uint64{0, 1, 77, 1 << 33, ^uint64(0)} {
		from := uint64(1)
		if file == 1<<33 {
			from = 1<<32 - 3000 // across the carry into the counter's high word
		}
		for range 3 {
			got := mine(file, from)
			if !indexed(file, got) {
				t.Fatalf("mine(%d, %d) = %d, whose chunk is not indexed", file, from, got)
			}
			for c := from; c < got; c++ {
				if indexed(file, c) {
					t.Fatalf("mine(%d, %d) = %d, but %d is indexed already", file, from, got, c)
				}
			}
			from = got + 1
		}
	}
}

// BenchmarkMine compares mine with the general chunk hasher it replaced, per hash tried.
func BenchmarkMine(b *testing.B) {
	b.Run("mine", func(b *testing.B) {
		c := uint64(1)
		for range b.N {
			c = mine(5, c) + 1
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(c), "ns/hash")
	})
	b.Run("hasher", func(b *testing.B) {
		h := hash.NewChunkHasher()
		var d [chunkBytes]byte
		binary.LittleEndian.PutUint64(d[:], 5)
		c := uint64(1)
		for range b.N {
			for ; ; c++ {
				binary.LittleEndian.PutUint64(d[8:], c)
				if h.Sum(d[:]).Mod(store.DedupeModulus) == 0 {
					break
				}
			}
			c++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(c), "ns/hash")
	})
}
