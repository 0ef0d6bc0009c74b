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

// TestMineFindsTheFirstIndexedChunk checks mine (eight lanes at once where GOEXPERIMENT=simd and
// AVX2 allow) and mineScalar against hash.Chunk: what they return is indexed, and no counter before
// it is.
func TestMineFindsTheFirstIndexedChunk(t *testing.T) {
	for name, mine := range map[string]func(file, from uint64) uint64{"mine": mine, "mineScalar": mineScalar} {
		for _, file := range []uint64{0, 1, 77, 1 << 33, ^uint64(0)} {
			from := uint64(1)
			if file == 1<<33 {
				from = 1<<32 - 3000 // across the carry into the counter's high word
			}
			for range 3 {
				got := mine(file, from)
				if !indexed(file, got) {
					t.Fatalf("%s(%d, %d) = %d, whose chunk is not indexed", name, file, from, got)
				}
				for c := from; c < got; c++ {
					if indexed(file, c) {
						t.Fatalf("%s(%d, %d) = %d, but %d is indexed already", name, file, from, got, c)
					}
				}
				from = got + 1
			}
		}
	}
}

// TestMineAgreesWithMineScalar runs both over a stretch of counters of several files: the same
// counters, in the same order (each lane of the wide path is one counter of the scalar path).
func TestMineAgreesWithMineScalar(t *testing.T) {
	for _, file := range []uint64{3, 1 << 40, 12345678901} {
		a, b := uint64(1), uint64(1)
		for i := range 200 {
			a, b = mine(file, a), mineScalar(file, b)
			if a != b {
				t.Fatalf("file %d, hit %d: mine %d, mineScalar %d", file, i, a, b)
			}
			a, b = a+1, b+1
		}
	}
}

// BenchmarkMine compares mine and mineScalar with the general chunk hasher they replaced, per hash
// tried (GOEXPERIMENT=simd go test -bench Mine ./test/scaleindex for the wide mine).
func BenchmarkMine(b *testing.B) {
	for name, mine := range map[string]func(file, from uint64) uint64{"mine": mine, "scalar": mineScalar} {
		b.Run(name, func(b *testing.B) {
			c := uint64(1)
			for range b.N {
				c = mine(5, c) + 1
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(c), "ns/hash")
		})
	}
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
