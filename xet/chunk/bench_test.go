package chunk

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
)

const benchSize = 64 << 20

// cpuMeter reports "cpu-MB/s": bytes processed per second of process CPU time (all goroutines).
type cpuMeter struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) cpuMeter {
	b.ResetTimer()
	return cpuMeter{b, testutil.ProcessCPU()}
}

func (m cpuMeter) stop(bytesPerOp int) {
	m.b.StopTimer()
	if d := testutil.ProcessCPU() - m.start; d > 0 {
		m.b.ReportMetric(float64(bytesPerOp)*float64(m.b.N)/d.Seconds()/1e6, "cpu-MB/s")
	}
}

var benchData []byte

func randomData(b *testing.B) []byte {
	if benchData == nil {
		benchData = vectors.SplitMix(benchSize, 42)
	}
	return benchData
}

// BenchmarkNext: the chunker kernel alone (Next over 64 MiB of random data, in memory).
func BenchmarkNext(b *testing.B) {
	data := randomData(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	m := startCPU(b)
	defer m.stop(len(data))
	for range b.N {
		pos := 0
		for pos < len(data) {
			k := Next(data[pos:])
			if k == 0 {
				k = len(data) - pos
			}
			pos += k
		}
	}
}

// BenchmarkBoundaries: Boundaries over 64 MiB of random data.
func BenchmarkBoundaries(b *testing.B) {
	data := randomData(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	m := startCPU(b)
	defer m.stop(len(data))
	for range b.N {
		Boundaries(data)
	}
}

// BenchmarkReader: streaming chunking plus chunk hashes (Reader over a bytes.Reader).
func BenchmarkReader(b *testing.B) {
	data := randomData(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	m := startCPU(b)
	defer m.stop(len(data))
	for range b.N {
		rd := NewReader(bytes.NewReader(data))
		for {
			if _, err := rd.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
		rd.Close()
	}
}

// BenchmarkSummarize: chunk list, chunk hashes, file hash and SHA-256 of a stream.
func BenchmarkSummarize(b *testing.B) {
	data := randomData(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	m := startCPU(b)
	defer m.stop(len(data))
	for range b.N {
		if _, err := Summarize(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
