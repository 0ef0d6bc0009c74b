package download_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// genReader yields n pseudo-random bytes without holding them: incompressible, or float16-like
// tensor data (random signs and mantissas around a narrow exponent range).
type genReader struct {
	r      *rand.Rand
	left   int64
	tensor bool
}

func newGen(n int64, seed uint64, tensor bool) *genReader {
	return &genReader{r: rand.New(rand.NewPCG(seed, 1)), left: n, tensor: tensor}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	p = p[:len(p)&^7]
	if len(p) == 0 {
		p = make([]byte, 8)[:g.left]
	}
	for i := 0; i+8 <= len(p); i += 8 {
		v := g.r.Uint64()
		if g.tensor {
			// two float16 values per 4 bytes: exponent 12..15 (|x| ~ 0.001..1), random mantissa/sign
			for k := 0; k < 4; k++ {
				m := uint16(v>>(k*16)) & 0x83FF
				e := uint16(12+(v>>(k*2+56))&3) << 10
				h := m | e
				p[i+2*k], p[i+2*k+1] = byte(h), byte(h>>8)
			}
			continue
		}
		binary.LittleEndian.PutUint64(p[i:], v)
	}
	g.left -= int64(len(p))
	return len(p), nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchSize() int64 {
	if s := os.Getenv("XET_BENCH_BYTES"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return 1 << 30
}

func benchUpload(b *testing.B, tensor bool, policy xorb.Policy) {
	n := benchSize()
	c := newLocal(b)
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := range b.N {
		s := upload.NewSession(upload.Config{CAS: c, Policy: policy})
		sum := [32]byte{byte(i)} // the oid is given, as git-lfs does
		if _, err := s.Upload(context.Background(), newGen(n, uint64(i+1), tensor), &sum, nil); err != nil {
			b.Fatal(err)
		}
		if err := s.Finish(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n*int64(b.N)), "cpu-ns/B")
}

func BenchmarkUploadIncompressible(b *testing.B) { benchUpload(b, false, xorb.PolicyAuto) }
func BenchmarkUploadTensor(b *testing.B)         { benchUpload(b, true, xorb.PolicyAuto) }

func benchDownload(b *testing.B, tensor bool, withSHA bool) {
	n := benchSize()
	c := newLocal(b)
	s := upload.NewSession(upload.Config{CAS: c})
	res, err := s.Upload(context.Background(), newGen(n, 1, tensor), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Finish(context.Background()); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		req := download.Request{File: res.FileHash, Size: n, Path: filepath.Join(dir, "out")}
		if withSHA {
			req.SHA256 = &res.SHA256
		}
		if err := download.Download(context.Background(), download.Config{CAS: c}, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n*int64(b.N)), "cpu-ns/B")
}

func BenchmarkDownloadIncompressible(b *testing.B)       { benchDownload(b, false, false) }
func BenchmarkDownloadIncompressibleSHA256(b *testing.B) { benchDownload(b, false, true) }
func BenchmarkDownloadTensor(b *testing.B)               { benchDownload(b, true, false) }

// TestPeakRSS uploads and downloads XET_RSS_BYTES bytes (a helper for test/bench-memory.sh; skipped
// unless the variable is set) and reports the process's peak RSS.
func TestPeakRSS(t *testing.T) {
	s := os.Getenv("XET_RSS_BYTES")
	if s == "" {
		t.Skip("set XET_RSS_BYTES to run")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	c := newLocal(t)
	sess := upload.NewSession(upload.Config{CAS: c})
	res, err := sess.Upload(context.Background(), newGen(n, 3, false), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("after upload of %d bytes: max RSS %d MB", n, maxRSS()>>20)
	p := filepath.Join(t.TempDir(), "out")
	if err := download.Download(context.Background(), download.Config{CAS: c}, download.Request{
		File: res.FileHash, Size: n, SHA256: &res.SHA256, Path: p}); err != nil {
		t.Fatal(err)
	}
	t.Logf("after download: max RSS %d MB", maxRSS()>>20)
	if lim := os.Getenv("XET_RSS_LIMIT_MB"); lim != "" {
		l, _ := strconv.ParseInt(lim, 10, 64)
		if got := maxRSS() >> 20; got > l {
			t.Fatalf("peak RSS %d MB over %d MB", got, l)
		}
	}
}

func maxRSS() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss << 10
}

// TestLargeRoundTrip streams 300 MiB through upload and download (skipped with -short).
func TestLargeRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("300 MiB round trip; runs without -short")
	}
	const n = 300 << 20
	c := newLocal(t)
	h := sha256.New()
	if _, err := io.Copy(h, newGen(n, 42, false)); err != nil {
		t.Fatal(err)
	}
	want := [32]byte(h.Sum(nil))
	s := upload.NewSession(upload.Config{CAS: c})
	res, err := s.Upload(context.Background(), newGen(n, 42, false), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	if res.SHA256 != want || res.Size != n {
		t.Fatalf("upload result: size %d, sha %x", res.Size, res.SHA256)
	}
	p := filepath.Join(t.TempDir(), "big")
	if err := download.Download(context.Background(), download.Config{CAS: c}, download.Request{
		File: res.FileHash, Size: n, SHA256: &want, Path: p}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(p); err != nil || st.Size() != n {
		t.Fatalf("downloaded file: %v", err)
	}
}

var _ cas.Client = (*cas.Local)(nil)
