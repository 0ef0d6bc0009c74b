package download_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// cutting is a CAS whose range fetches are cut (a retryable read error, as a reset connection
// gives) after the byte counts of cuts, one per fetch in order; it counts the bytes it served and
// keeps the ranges asked.
type cutting struct {
	cas.Client
	mu     sync.Mutex
	cuts   []int64
	served int64
	asked  []casapi.ByteRange
}

func (c *cutting) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	rc, err := c.Client.Fetch(ctx, x, f, r)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, r)
	cut := int64(-1)
	if len(c.cuts) > 0 {
		cut, c.cuts = c.cuts[0], c.cuts[1:]
	}
	return &cutBody{rc: rc, left: cut, c: c}, nil
}

type cutBody struct {
	rc   io.ReadCloser
	left int64 // bytes until the cut; -1: none
	c    *cutting
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, retry.Mark(fmt.Errorf("connection reset by the test: %w", io.ErrUnexpectedEOF))
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	b.c.mu.Lock()
	b.c.served += int64(n)
	b.c.mu.Unlock()
	return n, err
}

func (b *cutBody) Close() error { return b.rc.Close() }

// maxRecord is the most bytes one chunk record takes: the one cut mid-way is fetched again.
const maxRecord = xorb.MaxChunkRaw + xorb.RecordHeaderSize

// A range cut mid-way twice is fetched on from the record the cut was in: the bytes already
// received are not fetched again, and the file is whole and verified.
func TestCutRangeResumes(t *testing.T) {
	c := embeddedtest.New(t)
	data := testutil.RandomBytes(3<<20+777, 35)
	res := uploadWith(t, upload.Config{CAS: c, Policy: xorb.PolicyNone}, data)[0]
	cc := &cutting{Client: c, cuts: []int64{1 << 20, 900 << 10}}
	p := filepath.Join(t.TempDir(), "out.bin")
	sum := res.SHA256
	err := download.Download(context.Background(), download.Config{CAS: cc, Retry: retry.Policy{BaseDelay: time.Millisecond}},
		download.Request{File: res.FileHash, SHA256: &sum, Size: res.Size, Path: p})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
		t.Fatal("downloaded file differs")
	}
	if len(cc.asked) != 3 {
		t.Fatalf("ranges asked %v, want 3 (one range cut twice)", cc.asked)
	}
	whole := cc.asked[0]
	if limit := int64(whole.Len()) + 2*maxRecord; cc.served > limit {
		t.Fatalf("served %d bytes for a range of %d cut twice, want at most %d (only the records cut fetched again)", cc.served, whole.Len(), limit)
	}
	for i, cut := range []int64{1 << 20, 900 << 10} {
		prev, r := cc.asked[i], cc.asked[i+1]
		at := int64(prev.Start) + cut // where the cut was, in the xorb
		if r.End != whole.End || int64(r.Start) > at || int64(r.Start) < at-maxRecord {
			t.Fatalf("fetch %d asked %s after fetch %s was cut at byte %d, want it to go on from the record cut", i+2, r.Header(), prev.Header(), at)
		}
	}
}

// manyXorbs uploads parts, each into xorbs of its own, then their concatenation in the same
// session: a file whose plan has a range per part (and a few for the joins).
func manyXorbs(t *testing.T, c cas.Client, parts, size int) ([]byte, *upload.FileResult) {
	t.Helper()
	var files [][]byte
	var all []byte
	for i := range parts {
		p := testutil.RandomBytes(size, uint64(100+i))
		files = append(files, p)
		all = append(all, p...)
	}
	res := uploadWith(t, upload.Config{CAS: c, Policy: xorb.PolicyNone, SeparateFiles: true}, append(files, all)...)
	return all, res[len(res)-1]
}

// throttling is a CAS that answers 503 to a fetch while two others are in flight; the first two
// wait (up to a second) for a third to come, so the download meets the refusal for sure.
type throttling struct {
	cas.Client
	mu       sync.Mutex
	inflight int
	refused  int
	third    chan struct{}
}

func (c *throttling) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	c.mu.Lock()
	if c.inflight >= 2 {
		c.refused++
		if c.refused == 1 {
			close(c.third)
		}
		c.mu.Unlock()
		return nil, &cas.StatusError{Op: "fetch", Code: http.StatusServiceUnavailable}
	}
	c.inflight++
	c.mu.Unlock()
	select {
	case <-c.third:
	case <-time.After(time.Second):
	}
	rc, err := c.Client.Fetch(ctx, x, f, r)
	if err != nil {
		c.release()
		return nil, err
	}
	return &releasing{ReadCloser: rc, c: c}, nil
}

func (c *throttling) release() {
	c.mu.Lock()
	c.inflight--
	c.mu.Unlock()
}

type releasing struct {
	io.ReadCloser
	c    *throttling
	once sync.Once
}

func (b *releasing) Close() error {
	b.once.Do(b.c.release)
	return b.ReadCloser.Close()
}

// A server that takes two range fetches at once and answers 503 to more: the download's adaptive
// limit is halved, and the file arrives whole through the retries.
func TestAdaptShrinksOn503(t *testing.T) {
	c := embeddedtest.New(t)
	data, res := manyXorbs(t, c, 8, 512<<10)
	tc := &throttling{Client: c, third: make(chan struct{})}
	ctl := concurrency.New(concurrency.Config{Start: 8, Max: 8})
	p := filepath.Join(t.TempDir(), "out.bin")
	sum := res.SHA256
	err := download.Download(context.Background(), download.Config{CAS: tc, Adapt: ctl,
		Retry: retry.Policy{Attempts: 50, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}},
		download.Request{File: res.FileHash, SHA256: &sum, Size: res.Size, Path: p})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
		t.Fatal("downloaded file differs")
	}
	st := ctl.Stats()
	if tc.refused == 0 || st.Throttled == 0 || st.Low > 4 {
		t.Fatalf("%d fetches refused with 503; controller stats %+v: want the limit of 8 halved at least once", tc.refused, st)
	}
}

// rangeServer serves on loopback the plan of files in c (xorb URLs pointing back at itself) and
// byte ranges of xorbs; the first fetches are cut (the connection dropped) after the byte counts
// of cuts. It counts the xorb bytes it wrote.
type rangeServer struct {
	*httptest.Server
	c       cas.Client
	mu      sync.Mutex
	cuts    []int64
	written int64
}

func newRangeServer(t *testing.T, c cas.Client, cuts ...int64) *rangeServer {
	s := &rangeServer{c: c, cuts: cuts}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *rangeServer) serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/v2/reconstructions/"):
		h, err := hash.Parse(strings.TrimPrefix(p, "/v2/reconstructions/"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		plan, err := s.c.Reconstruct(ctx, h, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		for x, fs := range plan.Xorbs {
			for i := range fs {
				fs[i].URL = s.URL + "/xorb/" + x.String()
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(plan)
	case strings.HasPrefix(p, "/xorb/"):
		x, err := hash.Parse(strings.TrimPrefix(p, "/xorb/"))
		var br casapi.ByteRange
		if err == nil {
			_, err = fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &br.Start, &br.End)
		}
		if err != nil {
			http.Error(w, "bad xorb request", http.StatusBadRequest)
			return
		}
		rc, err := s.c.Fetch(ctx, x, casapi.XorbFetch{}, br)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		defer rc.Close()
		s.mu.Lock()
		cut := int64(-1)
		if len(s.cuts) > 0 {
			cut, s.cuts = s.cuts[0], s.cuts[1:]
		}
		s.mu.Unlock()
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/*", br.Start, br.End))
		w.Header().Set("Content-Length", fmt.Sprint(br.Len()))
		w.WriteHeader(http.StatusPartialContent)
		var src io.Reader = rc
		if cut >= 0 {
			src = io.LimitReader(rc, cut)
		}
		n, _ := io.Copy(w, src)
		s.mu.Lock()
		s.written += n
		s.mu.Unlock()
		if cut >= 0 {
			panic(http.ErrAbortHandler) // drop the connection mid-body
		}
	default:
		http.NotFound(w, r)
	}
}

// Through the real CAS client on loopback: the connection is dropped mid-range twice, and the
// server writes each byte of the range once, but for the records the cuts fell in.
func TestCutConnectionResumesOverHTTP(t *testing.T) {
	c := embeddedtest.New(t)
	data := testutil.RandomBytes(3<<20+4321, 36)
	res := uploadWith(t, upload.Config{CAS: c, Policy: xorb.PolicyNone}, data)[0]
	plan, err := c.Reconstruct(context.Background(), res.FileHash, nil)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, fs := range plan.Xorbs {
		for _, f := range fs {
			for _, r := range f.Ranges {
				total += int64(r.Bytes.Len())
			}
		}
	}
	srv := newRangeServer(t, c, 1<<20+5, 700<<10)
	hc := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, Retry: retry.Policy{BaseDelay: time.Millisecond}})
	p := filepath.Join(t.TempDir(), "out.bin")
	sum := res.SHA256
	err = download.Download(context.Background(), download.Config{CAS: hc, Retry: retry.Policy{BaseDelay: time.Millisecond}},
		download.Request{File: res.FileHash, SHA256: &sum, Size: res.Size, Path: p})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
		t.Fatal("downloaded file differs")
	}
	srv.Close() // its handlers have returned
	srv.mu.Lock()
	written := srv.written
	srv.mu.Unlock()
	if written < total || written > total+2*maxRecord {
		t.Fatalf("server wrote %d xorb bytes for ranges of %d with two cuts, want at most %d (only the records cut sent again)",
			written, total, total+2*maxRecord)
	}
}

// wholeOnly refuses (416, not retryable) a fetch that does not start where a listed range does.
type wholeOnly struct {
	*cutting
	starts map[uint64]bool
}

func (c *wholeOnly) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	if !c.starts[r.Start] {
		return nil, &cas.StatusError{Op: "fetch", Code: http.StatusRequestedRangeNotSatisfiable}
	}
	return c.cutting.Fetch(ctx, x, f, r)
}

// A CAS that serves listed ranges only, whole: after a cut, the rest of the range is refused, and
// the range is fetched whole again instead of failing the download.
func TestCutRangeRestartsWhereTheRestIsRefused(t *testing.T) {
	c := embeddedtest.New(t)
	data := testutil.RandomBytes(2<<20+99, 37)
	res := uploadWith(t, upload.Config{CAS: c, Policy: xorb.PolicyNone}, data)[0]
	cc := &wholeOnly{cutting: &cutting{Client: c, cuts: []int64{1 << 20}}, starts: map[uint64]bool{0: true}}
	p := filepath.Join(t.TempDir(), "out.bin")
	sum := res.SHA256
	err := download.Download(context.Background(), download.Config{CAS: cc, Retry: retry.Policy{BaseDelay: time.Millisecond}},
		download.Request{File: res.FileHash, SHA256: &sum, Size: res.Size, Path: p})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
		t.Fatal("downloaded file differs")
	}
	if len(cc.asked) != 2 || cc.asked[1] != cc.asked[0] {
		t.Fatalf("ranges served %v: want the listed range twice (cut, then whole)", cc.asked)
	}
}
