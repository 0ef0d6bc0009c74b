package cas_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/chaos"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

type env struct {
	tokens *server.Tokens // issues tokens the server accepts (same secret)
	proxy  *chaos.Proxy
	url    string // the proxy's
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret := bytes.Repeat([]byte("k"), 32)
	srv, err := server.New(server.Config{Store: st, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	p, err := chaos.New(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(p)
	t.Cleanup(ps.Close)
	return &env{tokens: server.NewTokens(secret, time.Now), proxy: p, url: ps.URL}
}

func (e *env) token(t *testing.T, exp time.Time) string {
	t.Helper()
	tok, err := e.tokens.Issue(server.Claims{Namespace: "org/repo", Scope: server.ScopeWrite, Exp: exp.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (e *env) client(t *testing.T) *cas.HTTP {
	return cas.NewHTTP(cas.HTTPOptions{Endpoint: e.url, Token: cas.NewRefreshingToken(e.token(t, time.Now().Add(time.Hour)), time.Time{}, nil),
		SessionID: "test-session", Retry: retry.Policy{Attempts: 4, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}})
}

func put(t *testing.T, c cas.Client, files ...[]byte) ([]*upload.FileResult, error) {
	t.Helper()
	ctx := context.Background()
	s := upload.NewSession(upload.Config{CAS: c, GlobalDedupe: true})
	var out []*upload.FileResult
	for _, f := range files {
		r, err := s.Upload(ctx, bytes.NewReader(f), nil, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, s.Finish(ctx)
}

func get(t *testing.T, c cas.Client, r *upload.FileResult, rng *casapi.ByteRange) (string, []byte, error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "file.bin")
	sum := r.SHA256
	err := download.Download(context.Background(), download.Config{CAS: c, Concurrency: 3, Retry: retry.Policy{BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}}, download.Request{
		File: r.FileHash, Range: rng, SHA256: &sum, Size: r.Size, Path: p})
	if err != nil {
		return dir, nil, err
	}
	b, err := os.ReadFile(p)
	return dir, b, err
}

func TestHTTPRoundTrip(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	sizes := []int{0, 1, 8 << 10, 1 << 20, 5<<20 + 3}
	var files [][]byte
	for _, n := range sizes {
		files = append(files, testutil.RandomBytes(n, uint64(n)))
	}
	res, err := put(t, c, files...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.SHA256 != sha256.Sum256(files[i]) {
			t.Fatalf("file %d: wrong SHA-256", i)
		}
		_, got, err := get(t, c, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, files[i]) {
			t.Fatalf("file %d (%d bytes) differs after the round trip", i, sizes[i])
		}
	}
	big := res[len(res)-1]
	for _, rg := range []casapi.ByteRange{{Start: 0, End: 0}, {Start: 70000, End: 3 << 20}, {Start: 5 << 20, End: 6 << 20}} {
		_, got, err := get(t, c, big, &rg)
		if err != nil {
			t.Fatal(err)
		}
		want := files[len(files)-1][rg.Start:min(rg.End+1, uint64(len(files[len(files)-1])))]
		if !bytes.Equal(got, want) {
			t.Fatalf("range %d-%d differs", rg.Start, rg.End)
		}
	}
	// The second upload of the same data is deduped through the server's global dedupe.
	res2, err := put(t, c, files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	if res2[0].NewBytes != 0 || res2[0].FileHash != big.FileHash {
		t.Fatalf("second upload of the same file stored %d new bytes", res2[0].NewBytes)
	}
}

func TestServerErrorIsRetried(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	e.proxy.Add(chaos.Rule{Method: "POST", Prefix: "/v1/xorbs/", Times: 1, Kind: chaos.Status, Code: 500, Message: "boom"})
	e.proxy.Add(chaos.Rule{Method: "GET", Prefix: "/v2/reconstructions/", Times: 2, Kind: chaos.Status, Code: 503, Message: "busy"})
	data := testutil.RandomBytes(300<<10, 1)
	res, err := put(t, c, data)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.proxy.Hits("POST /v1/xorbs/"); n != 2 {
		t.Fatalf("xorb upload sent %d times, want 2 (one 500, one retry)", n)
	}
	if _, got, err := get(t, c, res[0], nil); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download after 503s: %v", err)
	}
}

// A full disk (507) is said at once: not retried (it was, 5 times over ~12 s).
func TestDiskFullNotRetried(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	e.proxy.Add(chaos.Rule{Method: "POST", Prefix: "/v1/xorbs/", Times: 10, Kind: chaos.Status, Code: 507, Message: "server out of storage space"})
	start := time.Now()
	_, err := put(t, c, testutil.RandomBytes(100<<10, 3))
	if err == nil || !strings.Contains(err.Error(), "out of storage space") {
		t.Fatalf("want the server's 507 message, got %v", err)
	}
	if n := e.proxy.Hits("POST /v1/xorbs/"); n != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("a 507 was sent %d times (%v)", n, time.Since(start))
	}
}

func TestClientErrorNotRetried(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	e.proxy.Add(chaos.Rule{Method: "POST", Prefix: "/v1/xorbs/", Times: 10, Kind: chaos.Status, Code: 400, Message: "xorb hash does not match its chunks"})
	_, err := put(t, c, testutil.RandomBytes(100<<10, 2))
	if err == nil || !strings.Contains(err.Error(), "xorb hash does not match its chunks") || !strings.Contains(err.Error(), "400") {
		t.Fatalf("want the server's 400 message, got %v", err)
	}
	if retry.IsRetryable(err) {
		t.Fatal("a 400 is classified retryable")
	}
	if n := e.proxy.Hits("POST /v1/xorbs/"); n != 1 {
		t.Fatalf("a 400 was sent %d times", n)
	}
}

func TestExpiredTokenIsRefreshed(t *testing.T) {
	e := newEnv(t)
	var refreshes atomic.Int32
	refresh := func(ctx context.Context) (casapi.Token, error) {
		refreshes.Add(1)
		exp := time.Now().Add(time.Hour)
		return casapi.Token{AccessToken: e.token(t, exp), Exp: exp.Unix(), CasURL: e.url}, nil
	}
	// Expiry unknown to the client: the server's 401 is what makes it refresh.
	expired := e.token(t, time.Now().Add(-time.Minute))
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: e.url, Token: cas.NewRefreshingToken(expired, time.Time{}, refresh),
		Retry: retry.Policy{BaseDelay: time.Millisecond}})
	data := testutil.RandomBytes(50<<10, 3)
	res, err := put(t, c, data)
	if err != nil {
		t.Fatal(err)
	}
	if refreshes.Load() != 1 {
		t.Fatalf("%d refreshes, want 1", refreshes.Load())
	}
	// Known expiry inside the 30 s margin: refreshed before the first request.
	soon := time.Now().Add(10 * time.Second)
	c2 := cas.NewHTTP(cas.HTTPOptions{Endpoint: e.url, Token: cas.NewRefreshingToken(e.token(t, soon), soon, refresh)})
	if _, got, err := get(t, c2, res[0], nil); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download: %v", err)
	}
	if refreshes.Load() != 2 {
		t.Fatalf("%d refreshes, want 2", refreshes.Load())
	}
}

func TestBrokenTransfersAreRetried(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	data := testutil.RandomBytes(2<<20, 4)
	e.proxy.Add(chaos.Rule{Method: "POST", Prefix: "/v1/xorbs/", Times: 1, Kind: chaos.Reset})
	res, err := put(t, c, data)
	if err != nil {
		t.Fatalf("upload through a reset connection: %v", err)
	}
	e.proxy.Add(chaos.Rule{Method: "GET", Prefix: "/v2/reconstructions/", Times: 1, Kind: chaos.Reset})
	e.proxy.Add(chaos.Rule{Method: "GET", Prefix: "/xorbs/", Times: 1, Kind: chaos.Truncate, Offset: 1000})
	e.proxy.Add(chaos.Rule{Method: "GET", Prefix: "/xorbs/", Times: 1, Kind: chaos.Reset})
	if _, got, err := get(t, c, res[0], nil); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download through a truncated body and a reset: %v", err)
	}
	if e.proxy.Hits("GET /xorbs/") < 3 {
		t.Fatalf("xorb fetched %d times", e.proxy.Hits("GET /xorbs/"))
	}
}

func TestExpiredURLReplans(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	data := testutil.RandomBytes(200<<10, 5)
	res, err := put(t, c, data)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy.Add(chaos.Rule{Method: "GET", Prefix: "/xorbs/", Times: 1, Kind: chaos.Status, Code: 403, Message: "signed URL expired"})
	if _, got, err := get(t, c, res[0], nil); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download after a 403: %v", err)
	}
	if n := e.proxy.Hits("GET /v2/reconstructions/"); n != 2 {
		t.Fatalf("%d plans, want 2 (one re-plan)", n)
	}
}

func TestFlippedByteFailsCleanly(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	data := testutil.RandomBytes(300<<10, 6)
	res, err := put(t, c, data)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy.Add(chaos.Rule{Method: "GET", Prefix: "/xorbs/", Times: 100, Kind: chaos.Flip, Offset: 5000})
	dir, _, err := get(t, c, res[0], nil)
	if err == nil {
		t.Fatal("a corrupted xorb range was accepted")
	}
	if !strings.Contains(err.Error(), res[0].FileHash.String()) {
		t.Fatalf("error does not name the file: %v", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 0 {
		t.Fatalf("failed download left %d files (%s)", len(left), left[0].Name())
	}
}

func TestV1Fallback(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	e.proxy.Add(chaos.Rule{Prefix: "/v2/", Times: 100, Kind: chaos.Status, Code: 404, Message: "no such route"})
	data := testutil.RandomBytes(100<<10, 7)
	for range 2 {
		res, err := put(t, c, data)
		if err != nil {
			t.Fatal(err)
		}
		if _, got, err := get(t, c, res[0], nil); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("download over v1: %v", err)
		}
	}
	if n := e.proxy.Hits("/v2/shards"); n != 1 {
		t.Fatalf("v2 shards asked %d times; the fallback is not remembered", n)
	}
	if n := e.proxy.Hits("/v2/reconstructions/"); n != 1 {
		t.Fatalf("v2 reconstructions asked %d times; the fallback is not remembered", n)
	}
	if n := e.proxy.Hits("POST /v1/shards"); n != 2 {
		t.Fatalf("v1 shards used %d times, want 2", n)
	}
}

func TestNotFound(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	_, err := c.Reconstruct(context.Background(), randHash(), nil)
	if !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("unknown file: %v", err)
	}
	if _, err := c.QueryChunk(context.Background(), randHash()); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("unknown chunk: %v", err)
	}
}

// One layer retries a range: a xorb range that always fails retryably (a 503, a body cut short) is
// fetched exactly the download's budget of attempts in all, not the product of the CAS client's and
// the download's budgets; and the error names the range without the signed URL's signature.
func TestRangeRetriesAreOneBudget(t *testing.T) {
	for name, rule := range map[string]chaos.Rule{
		"503":       {Method: "GET", Prefix: "/xorbs/", Times: 1000, Kind: chaos.Status, Code: 503, Message: "busy"},
		"truncated": {Method: "GET", Prefix: "/xorbs/", Times: 1000, Kind: chaos.Truncate, Offset: 1000},
		"reset":     {Method: "GET", Prefix: "/xorbs/", Times: 1000, Kind: chaos.Reset},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			c := e.client(t) // its own budget is 4 attempts per call
			data := testutil.RandomBytes(100<<10, 7)
			res, err := put(t, c, data)
			if err != nil {
				t.Fatal(err)
			}
			e.proxy.Add(rule)
			const attempts = 3
			sum := res[0].SHA256
			err = download.Download(context.Background(), download.Config{CAS: c, Concurrency: 1,
				Retry: retry.Policy{Attempts: attempts, BaseDelay: time.Millisecond}},
				download.Request{File: res[0].FileHash, SHA256: &sum, Size: res[0].Size, Path: filepath.Join(t.TempDir(), "f")})
			if err == nil {
				t.Fatal("download succeeded through a range that always fails")
			}
			// net/http itself resends a GET once when a pooled keep-alive connection turns out
			// dead before any answer: that one extra request is allowed, a second layer's budget
			// (4 × 3 requests here) is not.
			if n := e.proxy.Hits("GET /xorbs/"); n < attempts || n > attempts+1 {
				t.Fatalf("the range was fetched %d times, want %d (one budget)", n, attempts)
			}
			if strings.Contains(err.Error(), "sig=") {
				t.Fatalf("the error carries the signed URL: %v", err)
			}
		})
	}
}

// HasXorb tells stored xorbs from others through HEAD /v1/xorbs/default/{hash}.
func TestHasXorb(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	res, err := put(t, c, testutil.RandomBytes(100<<10, 9))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := c.Reconstruct(context.Background(), res[0].FileHash, nil)
	if err != nil {
		t.Fatal(err)
	}
	for x := range plan.Xorbs {
		if ok, err := c.HasXorb(context.Background(), x); !ok || err != nil {
			t.Errorf("stored xorb %s: %v, %v", x, ok, err)
		}
	}
	if ok, err := c.HasXorb(context.Background(), randHash()); ok || err != nil {
		t.Errorf("unknown xorb: %v, %v", ok, err)
	}
}

// An answer that stops sending mid-body is abandoned after the stall timeout and the range is
// fetched again; the download completes (it hung for ever).
func TestStalledBodyIsRetried(t *testing.T) {
	e := newEnv(t)
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: e.url, Token: cas.NewRefreshingToken(e.token(t, time.Now().Add(time.Hour)), time.Time{}, nil),
		StallTimeout: 300 * time.Millisecond})
	data := testutil.RandomBytes(2<<20, 4)
	res, err := put(t, c, data)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy.Add(chaos.Rule{Method: "GET", Prefix: "/xorbs/", Times: 1, Kind: chaos.Stall, Offset: 100 << 10})
	start := time.Now()
	_, got, err := get(t, c, res[0], nil)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download through a stalled answer: %v", err)
	}
	if d, n := time.Since(start), e.proxy.Hits("GET /xorbs/"); d > 10*time.Second || n < 2 {
		t.Fatalf("took %v, %d range requests (want the stalled one and its retry)", d, n)
	}
}
