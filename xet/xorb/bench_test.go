package xorb

import (
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

func benchCompress(b *testing.B, src []byte) {
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	dst := make([]byte, 0, len(src)+1024)
	for b.Loop() {
		dst = appendLZ4Frame(dst[:0], src)
	}
	b.ReportMetric(float64(len(dst))/float64(len(src)), "ratio")
}

func benchDecompress(b *testing.B, src []byte) {
	frame := appendLZ4Frame(nil, src)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	dst := make([]byte, 0, len(src))
	for b.Loop() {
		var err error
		if dst, err = decodeLZ4Frame(dst[:0], frame, len(src)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLZ4Compress64KRandom(b *testing.B)   { benchCompress(b, vectors.SplitMix(65536, 1)) }
func BenchmarkLZ4Compress64KText(b *testing.B)     { benchCompress(b, csvText(65536, 1)) }
func BenchmarkLZ4Decompress64KRandom(b *testing.B) { benchDecompress(b, vectors.SplitMix(65536, 1)) }
func BenchmarkLZ4Decompress64KText(b *testing.B)   { benchDecompress(b, csvText(65536, 1)) }

func BenchmarkBG4Split(b *testing.B) {
	src := halfData(65536, 1)
	dst := make([]byte, 0, len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		dst = BG4Split(dst[:0], src)
	}
}

func BenchmarkBG4Regroup(b *testing.B) {
	src := BG4Split(nil, halfData(65536, 1))
	dst := make([]byte, 0, len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		dst = BG4Regroup(dst[:0], src)
	}
}

func BenchmarkBG4Predictor(b *testing.B) {
	src := halfData(65536, 1)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		BG4Recommended(src)
	}
}

func BenchmarkBG4LZ4Encode(b *testing.B) {
	src := halfData(65536, 1)
	dst := make([]byte, 0, 2*len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		dst = appendTestRecord(dst[:0], src, SchemeBG4LZ4)
	}
	b.ReportMetric(float64(len(dst)-8)/float64(len(src)), "ratio")
}

func BenchmarkBG4LZ4Decode(b *testing.B) {
	src := halfData(65536, 1)
	rec := appendTestRecord(nil, src, SchemeBG4LZ4)
	if rec[4] != byte(SchemeBG4LZ4) {
		b.Fatalf("test data not BG4-compressible")
	}
	dst := make([]byte, 0, len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, _, _, err = DecodeRecord(dst[:0], rec); err != nil {
			b.Fatal(err)
		}
	}
}

// benchChunks: 16 MiB of mixed text and bf16-like data in 64 KiB chunks.
func benchChunks() ([][]byte, []hash.Hash) {
	var chunks [][]byte
	var hashes []hash.Hash
	for i := 0; i < 256; i++ {
		var c []byte
		if i%2 == 0 {
			c = csvText(65536, uint64(i))
		} else {
			c = halfData(65536, uint64(i))
		}
		chunks = append(chunks, c)
		hashes = append(hashes, hash.Chunk(c))
	}
	return chunks, hashes
}

func BenchmarkBuilderAdd(b *testing.B) {
	chunks, hashes := benchChunks()
	b.SetBytes(int64(len(chunks) * 65536))
	b.ReportAllocs()
	bl := NewBuilder(PolicyAuto)
	for b.Loop() {
		for i, c := range chunks {
			bl.Add(c, hashes[i])
		}
		bl.Finish()
	}
}

func BenchmarkIndex(b *testing.B) {
	chunks, hashes := benchChunks()
	bl := NewBuilder(PolicyAuto)
	for i, c := range chunks {
		bl.Add(c, hashes[i])
	}
	x := bl.Finish()
	b.SetBytes(int64(x.RawBytes))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Index(x.Body); err != nil {
			b.Fatal(err)
		}
	}
}
