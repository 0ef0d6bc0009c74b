package xetfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkcache"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// fetchLog is a CAS that records every range fetched and can spoil or stall fetches.
type fetchLog struct {
	cas.Client
	mu     sync.Mutex
	ranges map[hash.Hash][]casapi.ByteRange
	flip   int           // flip a byte of the next flip fetches
	stall  chan struct{} // when set, fetches wait for it to close
	// stallAgain, when set, holds a fetch of bytes of a xorb fetched before until it is closed.
	stallAgain chan struct{}
}

func (c *fetchLog) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	c.mu.Lock()
	if c.ranges == nil {
		c.ranges = map[hash.Hash][]casapi.ByteRange{}
	}
	if c.stallAgain != nil && slices.ContainsFunc(c.ranges[x], func(o casapi.ByteRange) bool { return o.Start <= r.End && r.Start <= o.End }) {
		again := c.stallAgain
		c.mu.Unlock()
		select {
		case <-again:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.mu.Lock()
	}
	c.ranges[x] = append(c.ranges[x], r)
	flip := c.flip > 0
	if flip {
		c.flip--
	}
	stall := c.stall
	c.mu.Unlock()
	if stall != nil {
		select {
		case <-stall:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	rc, err := c.Client.Fetch(ctx, x, f, r)
	if err != nil || !flip {
		return rc, err
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, err
	}
	b[len(b)/2] ^= 0x55
	return io.NopCloser(bytes.NewReader(b)), nil
}

// fetchedTwice reports a byte of a xorb fetched by two ranges.
func (c *fetchLog) fetchedTwice() (hash.Hash, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for x, rs := range c.ranges {
		for i := range rs {
			for j := i + 1; j < len(rs); j++ {
				if rs[i].Start <= rs[j].End && rs[j].Start <= rs[i].End {
					return x, true
				}
			}
		}
	}
	return hash.Hash{}, false
}

func (c *fetchLog) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, rs := range c.ranges {
		n += len(rs)
	}
	return n
}

type world struct {
	t     *testing.T
	cas   *fetchLog
	files map[string][]byte // by oid
	res   map[string]*upload.FileResult
}

func newWorld(t *testing.T, contents ...[]byte) *world {
	t.Helper()
	w := &world{t: t, cas: &fetchLog{Client: embeddedtest.New(t)}, files: map[string][]byte{}, res: map[string]*upload.FileResult{}}
	s := upload.NewSession(upload.Config{CAS: w.cas.Client, Policy: xorb.PolicyAuto})
	for _, c := range contents {
		r, err := s.Upload(context.Background(), bytes.NewReader(c), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		oid := hex.EncodeToString(r.SHA256[:])
		w.files[oid], w.res[oid] = c, r
	}
	if err := s.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) files2(cfg Config) *Files {
	cfg.Log = zerolog.Nop()
	fs := New(cfg)
	w.t.Cleanup(fs.Close)
	return fs
}

func (w *world) open(fs *Files, oid string) *File {
	r := w.res[oid]
	src := Source{CAS: w.cas, File: r.FileHash, Concurrency: 4, Retry: retry.Policy{Attempts: 3, BaseDelay: time.Millisecond}, Where: "the test store"}
	return fs.Open(oid, r.Size, r.SHA256, "", func(context.Context) (Source, error) { return src, nil })
}

func oidOf(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func readAll(t *testing.T, r *Reader, size int64, step int) []byte {
	t.Helper()
	out := make([]byte, 0, size)
	buf := make([]byte, step)
	for off := int64(0); off < size; {
		n, err := r.ReadAt(context.Background(), buf, off)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		out = append(out, buf[:n]...)
		off += int64(n)
	}
	return out
}

// Random ranges and whole sequential reads give the file's bytes; a whole read is checked against
// the SHA-256.
func TestReadsEqualTheFile(t *testing.T) {
	data := testutil.RandomBytes(9<<20+12345, 1)
	w := newWorld(t, data)
	fs := w.files2(Config{})
	f := w.open(fs, oidOf(data))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 40; i++ {
		off := rng.Int64N(int64(len(data)))
		n := 1 + rng.IntN(300<<10)
		buf := make([]byte, n)
		got, err := f.ReadAt(context.Background(), buf, off)
		if err != nil {
			t.Fatalf("read %d at %d: %v", n, off, err)
		}
		if want := min(int64(n), int64(len(data))-off); int64(got) != want || !bytes.Equal(buf[:got], data[off:off+want]) {
			t.Fatalf("read %d at %d: %d bytes, differing", n, off, got)
		}
	}
	if got := readAll(t, f.NewReader(), int64(len(data)), 128<<10); !bytes.Equal(got, data) {
		t.Fatal("the whole read differs")
	}
	if st := fs.Stats(); st.SHAVerified != 1 || st.Bad != 0 {
		t.Fatalf("stats %+v", st)
	}
	if x, twice := w.cas.fetchedTwice(); twice {
		t.Fatalf("bytes of xorb %s were fetched twice", x)
	}
}

// Four readers of one file at different offsets at once get the right bytes, and no byte of a xorb
// is fetched twice (the flights of a chunk are shared, and read-ahead joins them).
func TestConcurrentReadersShareFetches(t *testing.T) {
	data := testutil.RandomBytes(24<<20, 2)
	w := newWorld(t, data)
	fs := w.files2(Config{RangeBytes: 1 << 20})
	f := w.open(fs, oidOf(data))
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := f.NewReader()
			start := int64(g) * 5 << 20
			buf := make([]byte, 128<<10)
			for off := start; off < start+8<<20 && off < int64(len(data)); off += int64(len(buf)) {
				n, err := r.ReadAt(context.Background(), buf, off)
				if err != nil || !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
					t.Errorf("reader %d at %d: %v", g, off, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if x, twice := w.cas.fetchedTwice(); twice {
		t.Fatalf("bytes of xorb %s were fetched twice", x)
	}
}

// A byte flipped on the way is never handed out: the fetch is tried again; when every attempt
// brings bad bytes the read fails.
func TestBadBytesAreRefused(t *testing.T) {
	data := testutil.RandomBytes(3<<20, 3)
	w := newWorld(t, data)
	fs := w.files2(Config{})
	f := w.open(fs, oidOf(data))
	w.cas.flip = 1
	buf := make([]byte, 1<<20)
	n, err := f.ReadAt(context.Background(), buf, 1<<20)
	if err != nil || !bytes.Equal(buf[:n], data[1<<20:2<<20]) {
		t.Fatalf("after one spoiled fetch: %v", err)
	}
	w.cas.flip = 100
	if _, err := f.ReadAt(context.Background(), buf, 0); err == nil {
		t.Fatal("a read whose every fetch was spoiled succeeded")
	}
	if fs.Stats().Bad < 2 {
		t.Fatalf("stats %+v", fs.Stats())
	}
}

// A file whose chunks verify but whose content is not its oid fails the read that completes it,
// and every later read.
func TestSHAMismatchFailsTheLastRead(t *testing.T) {
	data := testutil.RandomBytes(2<<20, 4)
	w := newWorld(t, data)
	fs := w.files2(Config{})
	oid := oidOf(data)
	r := w.res[oid]
	src := Source{CAS: w.cas, File: r.FileHash, Concurrency: 2, Where: "the test store"}
	wrong := r.SHA256
	wrong[0] ^= 1
	f := fs.Open(oid, r.Size, wrong, "", func(context.Context) (Source, error) { return src, nil })
	buf := make([]byte, 1<<20)
	if _, err := f.ReadAt(context.Background(), buf, 0); err != nil {
		t.Fatalf("first half: %v", err)
	}
	if _, err := f.ReadAt(context.Background(), buf, 1<<20); err == nil {
		t.Fatal("the read completing a file of the wrong SHA-256 succeeded")
	}
	if _, err := f.ReadAt(context.Background(), buf, 0); err == nil {
		t.Fatal("a read after the mismatch succeeded")
	}
}

// A read whose fetch does not answer fails after Config.Wait, not later.
func TestStalledFetchFailsAfterWait(t *testing.T) {
	data := testutil.RandomBytes(1<<20, 5)
	w := newWorld(t, data)
	fs := w.files2(Config{Wait: 2 * time.Second})
	f := w.open(fs, oidOf(data))
	buf := make([]byte, 4096)
	if _, err := f.ReadAt(context.Background(), buf, 0); err != nil { // plan and footer
		t.Fatal(err)
	}
	w.cas.stall = make(chan struct{})
	defer close(w.cas.stall)
	start := time.Now()
	_, err := f.ReadAt(context.Background(), buf, 900<<10)
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("stalled read: %v after %v", err, time.Since(start))
	}
}

// With a disk cache, a second Files (another mount) reads what the first fetched without fetching;
// after v1 was read whole, reading v2 (a small edit) fetches only what changed.
func TestDiskCacheAcrossMountsAndVersions(t *testing.T) {
	v1 := testutil.RandomBytes(8<<20, 6)
	v2 := append([]byte(nil), v1...)
	copy(v2[3<<20:], testutil.RandomBytes(40<<10, 7))
	w := newWorld(t, v1, v2)
	cache, err := chunkcache.Open(t.TempDir(), chunkcache.Options{Limit: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	fs := w.files2(Config{Cache: cache})
	readAll(t, w.open(fs, oidOf(v1)).NewReader(), int64(len(v1)), 128<<10)
	fs2 := w.files2(Config{Cache: cache})
	before := w.cas.count()
	if got := readAll(t, w.open(fs2, oidOf(v1)).NewReader(), int64(len(v1)), 128<<10); !bytes.Equal(got, v1) || w.cas.count() != before {
		t.Fatalf("v1 from the cache: equal %v, %d fetches", bytes.Equal(got, v1), w.cas.count()-before)
	}
	if got := readAll(t, w.open(fs2, oidOf(v2)).NewReader(), int64(len(v2)), 128<<10); !bytes.Equal(got, v2) {
		t.Fatal("v2 differs")
	}
	if st := fs2.Stats(); st.FromCAS > 400<<10 || st.FromDisk < 7<<20 {
		t.Fatalf("v2 after v1: %d bytes fetched, %d from the disk cache", st.FromCAS, st.FromDisk)
	}
}

// localOf offers a file's chunks as a local object (the chunk index's part).
type localOf struct{ spans []span.Span }

func (l localOf) Spans([]hash.Hash) []span.Span { return l.spans }

// Chunks of a local object are read from it, each verified: none is fetched; a local copy whose
// bytes changed is not used.
func TestLocalChunksAreNotFetched(t *testing.T) {
	v1 := testutil.RandomBytes(4<<20, 8)
	w := newWorld(t, v1)
	path := t.TempDir() + "/object"
	writeSpans := func(content []byte) []span.Span {
		var spans []span.Span
		err := download.Download(context.Background(), download.Config{CAS: w.cas.Client}, download.Request{
			File: w.res[oidOf(v1)].FileHash, Size: int64(len(v1)), Path: path, OnTerm: func(s span.Span) { spans = append(spans, s) }})
		if err != nil {
			t.Fatal(err)
		}
		for i := range spans {
			spans[i].Path = path
		}
		return spans
	}
	spans := writeSpans(v1)
	fs := w.files2(Config{Local: localOf{spans}})
	before := w.cas.count()
	if got := readAll(t, w.open(fs, oidOf(v1)).NewReader(), int64(len(v1)), 1<<20); !bytes.Equal(got, v1) || w.cas.count() != before {
		t.Fatalf("from the local object: equal %v, %d fetches", bytes.Equal(got, v1), w.cas.count()-before)
	}
	if st := fs.Stats(); st.FromLocal != int64(len(v1)) {
		t.Fatalf("stats %+v", st)
	}
	spoiled := testutil.RandomBytes(len(v1), 9)
	if err := writeFileAt(path, spoiled); err != nil {
		t.Fatal(err)
	}
	fs2 := w.files2(Config{Local: localOf{spans}})
	if got := readAll(t, w.open(fs2, oidOf(v1)).NewReader(), int64(len(v1)), 1<<20); !bytes.Equal(got, v1) {
		t.Fatal("a changed local object was used")
	}
}

// Close ends background work and fails later reads.
func TestCloseStopsReads(t *testing.T) {
	data := testutil.RandomBytes(1<<20, 10)
	w := newWorld(t, data)
	fs := New(Config{Log: zerolog.Nop()})
	f := w.open(fs, oidOf(data))
	fs.Close()
	if _, err := f.ReadAt(context.Background(), make([]byte, 10), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
}

func writeFileAt(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

// A sequential stream reads ahead: 128 KiB reads of 16 MiB take a few large fetches, not one per
// read; also when the object has a path in .git/lfs/objects where it is not.
func TestSequentialReadsReadAhead(t *testing.T) {
	data := testutil.RandomBytes(16<<20, 11)
	w := newWorld(t, data)
	fs := w.files2(Config{RangeBytes: 4 << 20})
	oid := oidOf(data)
	r := w.res[oid]
	src := Source{CAS: w.cas, File: r.FileHash, Concurrency: 4, Where: "the test store"}
	f := fs.Open(oid, r.Size, r.SHA256, t.TempDir()+"/not-here", func(context.Context) (Source, error) { return src, nil })
	if got := readAll(t, f.NewReader(), int64(len(data)), 128<<10); !bytes.Equal(got, data) {
		t.Fatal("the stream read wrong bytes")
	}
	// Without read-ahead (ReadAheadMax 1) the stream makes about one fetch per read (121 of 128);
	// with it, 20 to 45 here, more when the machine is busy and a read overtakes the read-ahead's
	// start: half the reads tells the two apart without depending on the machine's load.
	n := w.cas.count()
	t.Logf("%d fetches", n)
	if n > 64 {
		t.Fatalf("128 reads of 128 KiB made %d fetches: no read-ahead", n)
	}
}

// A plan naming other chunks than the file's (a CAS answering another file's plan, each chunk of it
// verifying) fails reads once the footers of all its xorbs are known.
func TestPlanOfAnotherFileFails(t *testing.T) {
	a := testutil.RandomBytes(2<<20, 12)
	b := testutil.RandomBytes(2<<20, 13)
	w := newWorld(t, a, b)
	fs := w.files2(Config{})
	ra, rb := w.res[oidOf(a)], w.res[oidOf(b)]
	lying := &otherPlan{Client: w.cas, other: rb.FileHash}
	src := Source{CAS: lying, File: ra.FileHash, Concurrency: 2, Where: "a lying CAS"}
	f := fs.Open(oidOf(a), ra.Size, ra.SHA256, "", func(context.Context) (Source, error) { return src, nil })
	buf := make([]byte, 4096)
	if _, err := f.ReadAt(context.Background(), buf, 1<<20); err == nil || !strings.Contains(err.Error(), "reads another file") {
		t.Fatalf("a read through another file's plan: %v", err)
	}
	if _, err := f.ReadAt(context.Background(), buf, 0); err == nil {
		t.Fatal("a later read succeeded")
	}
}

// A plan asked again after an expired URL is checked against the Xet hash as the first was: a CAS
// whose second plan names another file's chunks fails the reads after it. Before, the file kept
// the first plan's check, and a read served the other file's bytes without an error.
func TestReplanOfAnotherFileFails(t *testing.T) {
	a := testutil.RandomBytes(2<<20, 12)
	b := testutil.RandomBytes(2<<20, 13)
	w := newWorld(t, a, b)
	fs := w.files2(Config{})
	ra, rb := w.res[oidOf(a)], w.res[oidOf(b)]
	c := &otherAfterExpiry{Client: w.cas, other: rb.FileHash}
	src := Source{CAS: c, File: ra.FileHash, Concurrency: 2, Retry: retry.Policy{Attempts: 3, BaseDelay: time.Millisecond}, Where: "a CAS"}
	f := fs.Open(oidOf(a), ra.Size, ra.SHA256, "", func(context.Context) (Source, error) { return src, nil })
	buf := make([]byte, 4096)
	if _, err := f.ReadAt(context.Background(), buf, 0); err != nil {
		t.Fatal(err)
	}
	c.expire.Store(true) // the next fetch's URL has expired: the file asks for its plan again
	for _, off := range []int64{1 << 20, 1<<20 + 512<<10} {
		n, err := f.ReadAt(context.Background(), buf, off)
		if err == nil && bytes.Equal(buf[:n], b[off:off+int64(n)]) {
			t.Fatalf("a read at %d after the replan served the other file's bytes", off)
		}
		if err == nil && !bytes.Equal(buf[:n], a[off:off+int64(n)]) {
			t.Fatalf("a read at %d after the replan served wrong bytes without an error", off)
		}
	}
}

// otherAfterExpiry answers the first reconstruction with the file's plan and every later one with
// another file's; with expire set, its next fetch fails as an expired URL.
type otherAfterExpiry struct {
	cas.Client
	other  hash.Hash
	plans  atomic.Int32
	expire atomic.Bool
}

func (c *otherAfterExpiry) Reconstruct(ctx context.Context, f hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	if c.plans.Add(1) > 1 {
		f = c.other
	}
	return c.Client.Reconstruct(ctx, f, rng)
}

func (c *otherAfterExpiry) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	if c.expire.CompareAndSwap(true, false) {
		return nil, fmt.Errorf("%w: 403", cas.ErrURLExpired)
	}
	return c.Client.Fetch(ctx, x, f, r)
}

// otherPlan answers every reconstruction with the plan of another file.
type otherPlan struct {
	cas.Client
	other hash.Hash
}

func (o *otherPlan) Reconstruct(ctx context.Context, _ hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	return o.Client.Reconstruct(ctx, o.other, rng)
}

// withholding is a CAS whose URLs are at origin and whose footers zero the hashes of the chunks
// outside the URL's ranges, as xet-server serves them (a repository learns nothing of chunks it
// may not read).
type withholding struct {
	cas.Client
	origin string
	spoil  atomic.Int32 // the next footers served get a wrong hash for the first chunk they show
}

func (c *withholding) Reconstruct(ctx context.Context, f hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	p, err := c.Client.Reconstruct(ctx, f, rng)
	if err != nil {
		return nil, err
	}
	for x, fs := range p.Xorbs {
		for i := range fs {
			fs[i].URL = c.origin + "/v1/fetch/" + x.String()
		}
	}
	return p, nil
}

func (c *withholding) XorbFooter(ctx context.Context, x hash.Hash, f casapi.XorbFetch) (*xorb.Footer, error) {
	foot, err := c.Client.XorbFooter(ctx, x, f)
	if err != nil {
		return nil, err
	}
	out := *foot
	out.ChunkHashes = make([]hash.Hash, len(foot.ChunkHashes))
	for _, r := range f.Ranges {
		copy(out.ChunkHashes[r.Chunks.Start:r.Chunks.End], foot.ChunkHashes[r.Chunks.Start:r.Chunks.End])
	}
	if c.spoil.Add(-1) >= 0 && len(f.Ranges) > 0 {
		out.ChunkHashes[f.Ranges[0].Chunks.Start][0] ^= 1
	}
	return &out, nil
}

// A footer with withheld hashes that changed on the way (one of the file's hashes wrong) fails the
// reads that find it wrong, and is fetched again by the next: once the CAS serves it right, the
// file reads.
func TestWithheldFooterDamagedOnTheWay(t *testing.T) {
	a := testutil.RandomBytes(2<<20, 23)
	b := testutil.RandomBytes(2<<20, 24)
	w := newWorld(t, a, b)
	ra := w.res[oidOf(a)]
	fs := w.files2(Config{Cache: nil})
	c := &withholding{Client: w.cas, origin: "http://127.0.0.1:8080"}
	c.spoil.Store(1)
	src := Source{CAS: c, File: ra.FileHash, Concurrency: 2, Retry: retry.Policy{Attempts: 1}, Where: "http://127.0.0.1:8080"}
	f := fs.Open(oidOf(a), ra.Size, ra.SHA256, "", func(context.Context) (Source, error) { return src, nil })
	buf := make([]byte, 64<<10)
	if _, err := f.ReadAt(context.Background(), buf, 0); err == nil {
		t.Fatal("a read through a damaged footer succeeded")
	}
	// The next read may join a fetch the first one started (read-ahead) that is still in flight
	// with the damaged footer: it tries once more with fetches of its own, so it succeeds. Kept
	// forever (the defect), every read would fail.
	n, err := f.ReadAt(context.Background(), buf, 0)
	if err != nil || !bytes.Equal(buf[:n], a[:len(buf)]) {
		t.Fatalf("the read after the CAS served the footer right: %d bytes, %v", n, err)
	}
	if got := readAll(t, f.NewReader(), ra.Size, 256<<10); !bytes.Equal(got, a) {
		t.Fatal("the whole read differs")
	}
}

// A footer whose server withheld the hashes of other files' chunks (two files share a xorb) is read
// when it comes from the CAS that gave the plan (its hashes of the file's chunks tied to the Xet
// file hash by the plan check), and refused from any other origin, where it must verify against the
// xorb hash.
func TestWithheldFooterHashes(t *testing.T) {
	a := testutil.RandomBytes(2<<20, 21)
	b := testutil.RandomBytes(2<<20, 22)
	w := newWorld(t, a, b)
	ra := w.res[oidOf(a)]
	for _, tc := range []struct {
		where string
		ok    bool
	}{{"http://127.0.0.1:8080", true}, {"http://cas.example:8080", false}} {
		fs := w.files2(Config{Cache: nil})
		src := Source{CAS: &withholding{Client: w.cas, origin: "http://127.0.0.1:8080"}, File: ra.FileHash, Concurrency: 2, Where: tc.where}
		f := fs.Open(oidOf(a), ra.Size, ra.SHA256, "", func(context.Context) (Source, error) { return src, nil })
		buf := make([]byte, 64<<10)
		n, err := f.ReadAt(context.Background(), buf, 1<<20)
		if tc.ok && (err != nil || !bytes.Equal(buf[:n], a[1<<20:1<<20+len(buf)])) {
			t.Fatalf("CAS at %s, URLs on its origin: %d bytes, %v", tc.where, n, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "does not verify")) {
			t.Fatalf("CAS at %s, URLs on another origin: %v", tc.where, err)
		}
		if tc.ok {
			if got := readAll(t, f.NewReader(), ra.Size, 256<<10); !bytes.Equal(got, a) {
				t.Fatal("the whole read differs")
			}
		}
	}
}
