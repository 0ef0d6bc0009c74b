package chunk

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// fixedReader returns at most n bytes per Read.
type fixedReader struct {
	r io.Reader
	n int
}

func (f *fixedReader) Read(p []byte) (int, error) {
	if len(p) > f.n {
		p = p[:f.n]
	}
	return f.r.Read(p)
}

// streamData mixes random data with long runs (forced cuts) and low-entropy parts, and spans
// several blocks so chunks straddle block edges at many offsets.
func streamData(n int) []byte {
	data := vectors.SplitMix(n, 99)
	for i := n / 5; i < n/5+3*MaxSize && i < n; i++ {
		data[i] = 0
	}
	for i := n / 2; i < n/2+MaxSize && i < n; i++ {
		data[i] &= 3
	}
	return data
}

func TestReaderIndependentOfReadSizes(t *testing.T) {
	sizes := []int{0, 1, MinSize - 1, MinSize, MinSize + 1, MaxSize - 1, MaxSize, MaxSize + 1,
		blockSize - 1, blockSize, blockSize + 1, 2*blockSize + MaxSize/2, 3<<20 + 12345}
	if testing.Short() {
		sizes = sizes[:10]
	}
	for _, size := range sizes {
		data := streamData(size)
		want := Boundaries(data)
		readers := map[string]io.Reader{
			"whole":     bytes.NewReader(data),
			"by-1":      &fixedReader{bytes.NewReader(data), 1},
			"by-37":     &fixedReader{bytes.NewReader(data), 37},
			"by-255":    &fixedReader{bytes.NewReader(data), 255},
			"by-65537":  &fixedReader{bytes.NewReader(data), 65537},
			"one-byte":  iotest.OneByteReader(bytes.NewReader(data)),
			"half":      iotest.HalfReader(bytes.NewReader(data)),
			"data-err":  iotest.DataErrReader(bytes.NewReader(data)),
			"no-writer": struct{ io.Reader }{bytes.NewReader(data)},
		}
		if size > 1<<20 { // byte-at-a-time reads of megabytes only slow the suite down
			delete(readers, "by-1")
			delete(readers, "one-byte")
		}
		for name, r := range readers {
			if got := readerBoundaries(t, NewReader(r)); !slices.Equal(got, want) {
				t.Errorf("size %d, %s: %d boundaries %v, want %d %v", size, name, len(got), clip(got), len(want), clip(want))
			}
		}
	}
}

func clip(b []int) []int {
	if len(b) > 8 {
		return b[:8]
	}
	return b
}

func TestReaderChunkDataAndHashes(t *testing.T) {
	data := streamData(2<<20 + 777)
	rd := NewReader(&fixedReader{bytes.NewReader(data), 100000})
	defer rd.Close()
	var got []byte
	for {
		c, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.Data, data[c.Offset:c.Offset+int64(len(c.Data))]) {
			t.Fatalf("chunk at %d: data differs from the stream", c.Offset)
		}
		if c.Hash != hash.Chunk(c.Data) {
			t.Fatalf("chunk at %d: hash differs", c.Offset)
		}
		got = append(got, c.Data...)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("chunks concatenate to %d bytes, want the %d input bytes", len(got), len(data))
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Errorf("Next after the end = %v, want io.EOF again", err)
	}
}

func TestReaderSHA256(t *testing.T) {
	for _, size := range []int{0, 5, blockSize - 1, blockSize, 1<<20 + 3} { // inline, then the pipeline
		data := streamData(size)
		rd := NewReaderOptions(bytes.NewReader(data), Options{SHA256: true})
		if _, ok := rd.SHA256(); ok {
			t.Errorf("size %d: SHA256 ready before the end", size)
		}
		for {
			if _, err := rd.Next(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		sum, ok := rd.SHA256()
		if !ok || sum != sha256.Sum256(data) {
			t.Errorf("size %d: SHA256 = %x, %v; want %x", size, sum, ok, sha256.Sum256(data))
		}
		rd.Close()
	}
	rd := NewReader(bytes.NewReader([]byte("x")))
	readerBoundaries(t, rd)
	if _, ok := rd.SHA256(); ok {
		t.Error("SHA256 reported without Options.SHA256")
	}
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	data := streamData(blockSize + 3*MaxSize)
	all := Boundaries(data)
	failAt := blockSize + 2*MaxSize
	r := io.MultiReader(bytes.NewReader(data[:failAt]), iotest.ErrReader(boom))
	rd := NewReader(r)
	defer rd.Close()
	var ends []int
	var err error
	for {
		var c Chunk
		if c, err = rd.Next(); err != nil {
			break
		}
		ends = append(ends, int(c.Offset)+len(c.Data))
	}
	if !errors.Is(err, boom) {
		t.Fatalf("Next error = %v, want %v", err, boom)
	}
	// Every chunk given before the error is a real chunk of the stream, and none reaches past it.
	if len(ends) == 0 || !slices.Equal(ends, all[:len(ends)]) || ends[len(ends)-1] > failAt {
		t.Errorf("chunks before the error end at %v, stream boundaries %v (failure at %d)", ends, clip(all), failAt)
	}
	if _, err2 := rd.Next(); !errors.Is(err2, boom) {
		t.Errorf("second Next after the error = %v, want the same error", err2)
	}
}

// blockingReader serves data, then closes blocked and blocks until release is closed.
type blockingReader struct {
	data             []byte
	blocked, release chan struct{}
}

func (b *blockingReader) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		close(b.blocked)
		<-b.release
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

func TestReaderCloseEarlyLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	data := streamData(8 << 20)
	for _, opts := range []Options{{}, {SHA256: true}} {
		rd := NewReaderOptions(bytes.NewReader(data), opts)
		if _, err := rd.Next(); err != nil {
			t.Fatal(err)
		}
		// The producer fills its queue and blocks: every batch but the consumer's is hashed and queued.
		if !testutil.Eventually(10*time.Second, func() bool { return len(rd.out) == nBatches-1 }) {
			t.Fatalf("the producer queued %d batches, want %d", len(rd.out), nBatches-1)
		}
		rd.Close()
		rd.Close() // twice is fine
		if _, err := rd.Next(); !errors.Is(err, ErrClosed) {
			t.Errorf("Next after Close = %v, want ErrClosed", err)
		}
	}
	// Close does not wait for a Read in progress that blocks; the goroutine ends when it returns.
	br := &blockingReader{data: streamData(2 * blockSize), blocked: make(chan struct{}), release: make(chan struct{})}
	rd := NewReaderOptions(br, Options{SHA256: true})
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	<-br.blocked
	closed := make(chan struct{})
	go func() { rd.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a Read in progress")
	}
	select {
	case <-rd.reading:
		t.Fatal("the reading goroutine returned before its Read did")
	default:
	}
	close(br.release)
	<-rd.reading
	// A Reader that never started needs no Close, and Close on it is harmless.
	NewReader(bytes.NewReader(data)).Close()

	goleak.VerifyNone(t, before)
}

func TestSummarize(t *testing.T) {
	for _, size := range []int{0, 1, MaxSize + 1, 3<<20 + 1} {
		data := streamData(size)
		s, err := Summarize(&fixedReader{bytes.NewReader(data), 4096})
		if err != nil {
			t.Fatal(err)
		}
		var entries []hash.Entry
		prev := 0
		for _, end := range Boundaries(data) {
			entries = append(entries, hash.Entry{Hash: hash.Chunk(data[prev:end]), Size: uint64(end - prev)})
			prev = end
		}
		if !slices.Equal(s.Chunks, entries) {
			t.Errorf("size %d: %d chunks, want %d", size, len(s.Chunks), len(entries))
		}
		if s.FileHash != hash.File(entries) || s.Size != int64(size) || s.SHA256 != sha256.Sum256(data) {
			t.Errorf("size %d: summary %v %d %x", size, s.FileHash, s.Size, s.SHA256)
		}
	}
	if s, err := Summarize(bytes.NewReader(nil)); err != nil || !s.FileHash.IsZero() || len(s.Chunks) != 0 {
		t.Errorf("empty stream: %+v, %v; want zero hash and no chunks", s, err)
	}
	boom := errors.New("boom")
	if _, err := Summarize(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("Summarize of a failing reader: %v", err)
	}
}

// badReader returns a count outside [0, len(p)], or nothing forever.
type badReader struct{ n int }

func (b badReader) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, nil
	}
	return b.n * len(p), nil
}

func TestReaderMisbehavingSource(t *testing.T) {
	for name, r := range map[string]io.Reader{"negative": badReader{-1}, "too-many": badReader{2}, "no-progress": badReader{0}} {
		s, err := Summarize(r)
		if err == nil || s != nil {
			t.Errorf("%s: Summarize = %v, %v; want an error", name, s, err)
		}
	}
}

// FuzzReaderMatchesBoundaries: for any content (a pattern repeated up to a few blocks) and any read
// size, the streaming Reader cuts where Boundaries does, with correct offsets and hashes.
func FuzzReaderMatchesBoundaries(f *testing.F) {
	f.Add([]byte("a"), uint32(1), uint16(1))
	f.Add([]byte{0}, uint32(MaxSize+1), uint16(37))
	f.Add(vectors.SplitMix(4096, 3), uint32(300), uint16(255))
	f.Fuzz(func(t *testing.T, pattern []byte, repeat uint32, step uint16) {
		if len(pattern) == 0 || step == 0 {
			return
		}
		n := min(int(repeat)*len(pattern), 3*blockSize+MaxSize)
		data := bytes.Repeat(pattern, n/len(pattern)+1)[:n]
		want := Boundaries(data)
		if got := readerBoundaries(t, NewReader(&fixedReader{bytes.NewReader(data), int(step)})); !slices.Equal(got, want) {
			t.Fatalf("%d bytes read by %d: boundaries %v, want %v", n, step, clip(got), clip(want))
		}
	})
}
