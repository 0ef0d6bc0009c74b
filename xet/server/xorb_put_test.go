package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// randomXorb builds a xorb of n bytes of incompressible data cut into 64 KiB chunks.
func randomXorb(tb testing.TB, n int, seed uint64) *xorb.Xorb {
	tb.Helper()
	data := vectors.SplitMix(n, seed)
	bld := xorb.NewBuilder(xorb.PolicyLZ4)
	for off := 0; off < n; off += 64 << 10 {
		c := data[off:min(off+64<<10, n)]
		bld.Add(c, hash.Chunk(c))
	}
	return bld.Finish()
}

// Xorb uploads hold their whole body in memory while it is validated, so the server reads at most
// MaxXorbPuts of them at once: a client that announces a body and stalls keeps the others waiting,
// not growing the server's memory.
func TestXorbPutsAreBounded(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxXorbPuts = 1 })
	x := randomXorb(t, 256<<10, 5)

	// A stalled upload takes the only slot. Release it on any exit, before the server closes (which
	// waits for its handlers).
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(fmt.Errorf("test ended")) })
	stalled, err := http.NewRequest("POST", e.base+"/v1/xorbs/default/"+randomXorb(t, 64<<10, 6).Hash.String(), pr)
	if err != nil {
		t.Fatal(err)
	}
	stalled.ContentLength = 1 << 20
	stalledDone := make(chan int, 1)
	go func() {
		res, err := http.DefaultClient.Do(stalled)
		if err != nil {
			stalledDone <- -1
			return
		}
		res.Body.Close()
		stalledDone <- res.StatusCode
	}()
	if _, err := pw.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
	// The transport may take that byte before the handler runs: wait until it holds the slot.
	if !testutil.Eventually(5*time.Second, func() bool { return e.srv.xorbs.inUse() > 0 }) {
		t.Fatal("the stalled upload never took a slot")
	}

	second := make(chan resp, 1)
	go func() { second <- e.do("POST", "/v1/xorbs/default/"+x.Hash.String(), x.Body) }()
	select {
	case r := <-second:
		t.Fatalf("a second xorb upload ran beside the stalled one: %v", r)
	case <-time.After(300 * time.Millisecond):
	}
	pw.CloseWithError(fmt.Errorf("client gave up"))
	if code := <-stalledDone; code == http.StatusOK {
		t.Fatalf("the truncated upload was accepted")
	}
	select {
	case r := <-second:
		if r.status != http.StatusOK {
			t.Fatalf("second upload after the slot freed: %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second upload did not run after the stalled one ended")
	}
	if ok, err := e.st.HasXorb(t.Context(), x.Hash); err != nil || !ok {
		t.Fatalf("second xorb not stored: %v %v", ok, err)
	}
}

// BenchmarkPutXorbHTTP measures POST /v1/xorbs of a full 64 MiB incompressible xorb on loopback:
// reading the body, decoding and hashing every chunk, and storing it.
func BenchmarkPutXorbHTTP(b *testing.B) {
	xs := make([]*xorb.Xorb, 4)
	for i := range xs {
		xs[i] = randomXorb(b, 64<<20, uint64(100+i))
	}
	b.SetBytes(int64(len(xs[0].Body)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		e := newEnv(b, nil) // a fresh store, so every put is an insert
		x := xs[i%len(xs)]
		i++
		b.StartTimer()
		res, err := http.Post(e.base+"/v1/xorbs/default/"+x.Hash.String(), "application/octet-stream", bytes.NewReader(x.Body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
}

// An upload of a xorb the store already holds is answered after its body is read, so the
// connection stays open and a reverse proxy in front keeps using it (it was answered at once and
// the connection closed: a new connection per duplicate upload, and a 502 from proxies that were
// still sending the body).
func TestExistingXorbThroughReverseProxy(t *testing.T) {
	e := newEnv(t, nil)
	var chunks [][]byte
	for i := range 96 {
		chunks = append(chunks, testutil.RandomBytes(64<<10, uint64(i)+1))
	}
	of := testutil.NewOneXorbFile(chunks)
	var conns atomic.Int32
	backend := httptest.NewUnstartedServer(e.srv.Handler())
	backend.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	backend.Start()
	t.Cleanup(backend.Close)
	u, _ := url.Parse(backend.URL)
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(u))
	t.Cleanup(proxy.Close)
	for i := range 4 {
		res := e.do("POST", proxy.URL+"/v1/xorbs/default/"+of.Xorb.String(), of.Body)
		want := `"was_inserted":` + strconv.FormatBool(i == 0)
		if res.status != http.StatusOK || !strings.Contains(string(res.body), want) {
			t.Fatalf("upload %d through the proxy: %v", i, res)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("the proxy opened %d connections to the server for 4 uploads, want 1 (the server closed them)", n)
	}
}

// Request bodies that trickle in slower than the minimum rate are cut with 408 and free their
// upload slot: with every slot held by a stalled upload, another upload still goes through once
// the window has passed, and the health route answers all along.
func TestSlowBodiesAreCut(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.MaxXorbPuts = 2
		c.Limits.BodyMinRate, c.Limits.BodyWindow = 64<<10, 300*time.Millisecond
	})
	r := loadRef(t)
	path := "/v1/xorbs/default/" + r.xorbHash.String()
	type answer struct {
		status int
		err    error
	}
	stalled := make(chan answer, 2)
	var stalls sync.WaitGroup
	defer stalls.Wait()
	release := make(chan struct{})
	defer close(release) // before the wait
	// Hold both slots: a body that sends 1 KB and then nothing.
	for range 2 {
		pr, pw := io.Pipe()
		stalls.Go(func() {
			pw.Write(r.xorbBody[:1000]) // returns once the server read it
			<-release
			pw.Close()
		})
		go func() {
			req, _ := http.NewRequest("POST", e.base+path, pr)
			req.ContentLength = int64(len(r.xorbBody))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				stalled <- answer{err: err}
				return
			}
			res.Body.Close()
			stalled <- answer{status: res.StatusCode}
		}()
	}
	if !testutil.Eventually(10*time.Second, func() bool { return e.srv.xorbs.inUse() == 2 }) {
		t.Fatal("the stalled uploads do not hold both slots")
	}
	// No time bound here (the machine may be loaded): the health check answers at all, and the
	// upload can only get a slot by the server cutting a stalled body, since their writers are
	// released only when the test returns.
	if res := e.do("GET", "/healthz", nil); res.status != 200 {
		t.Fatalf("health during the stall: %v", res)
	}
	if res := e.do("POST", path, r.xorbBody); res.status != 200 {
		t.Fatalf("upload while the slots were held: %v", res)
	}
	for range 2 {
		if a := <-stalled; a.err == nil && a.status != http.StatusRequestTimeout {
			t.Fatalf("a stalled body was answered %d, want 408", a.status)
		}
	}
}

// A xorb sent chunked (no Content-Length) is stored and counted in the metrics by the bytes that
// arrived (it was counted as -1 bytes, which made the counter panic: a 500 for a stored xorb).
func TestChunkedXorbCountedInMetrics(t *testing.T) {
	e, m := opsEnv(t, nil)
	x := randomXorb(t, 1_000_000, 5)
	req, err := http.NewRequest("POST", e.base+"/v1/xorbs/default/"+x.Hash.String(), io.MultiReader(bytes.NewReader(x.Body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token("alice", "org/x", scopeWrite, time.Hour))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("chunked xorb upload: %d", res.StatusCode)
	}
	fams, _ := scrape(t, m)
	if got := metric(fams, "xet_xorb_bytes_stored_total"); got != float64(len(x.Body)) {
		t.Fatalf("xorb bytes stored: %v, want %d", got, len(x.Body))
	}
}
