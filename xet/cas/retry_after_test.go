package cas_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// scriptedServer answers every request with answer(n) (n counts requests from 1) and records when
// each arrived.
type scriptedServer struct {
	*httptest.Server
	mu    sync.Mutex
	times []time.Time
	paths []string
}

func newScripted(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *scriptedServer {
	t.Helper()
	s := &scriptedServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.times = append(s.times, time.Now())
		s.paths = append(s.paths, r.Method+" "+r.URL.Path)
		n := len(s.times)
		s.mu.Unlock()
		answer(n, w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scriptedServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.times)
}

func fixedHash(b byte) hash.Hash {
	var h hash.Hash
	for i := range h {
		h[i] = b + byte(i)
	}
	return h
}

func jsonError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, "{\"error\":%q}\n", msg)
}

// A 429 with Retry-After: 1 is retried, not sooner than one second later, even when the client's own
// backoff is far shorter.
func TestRetryAfterIsHonoured(t *testing.T) {
	srv := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			jsonError(w, http.StatusTooManyRequests, "slow down")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"was_inserted":true}`)
	})
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, Token: cas.NewRefreshingToken("t", time.Time{}, nil), Retry: retry.Policy{Attempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second}})
	start := time.Now()
	inserted, err := c.PutXorb(context.Background(), &xorb.Xorb{Hash: fixedHash(1), Body: []byte("body")})
	if err != nil {
		t.Fatalf("PutXorb after one 429: %v", err)
	}
	if !inserted {
		t.Fatal("the second answer said was_inserted=true")
	}
	if n := srv.requests(); n != 2 {
		t.Fatalf("%d requests, want 2 (one 429, one retry)", n)
	}
	if gap := srv.times[1].Sub(srv.times[0]); gap < time.Second {
		t.Fatalf("retried %v after a 429 asking for Retry-After: 1", gap)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("PutXorb took %v for a 1 s Retry-After", took)
	}
}

// A server that keeps failing is retried a bounded number of times, then the error names the
// status and the server's message.
func TestRetriesAreBounded(t *testing.T) {
	for _, tc := range []struct {
		attempts, want int
	}{{3, 3}, {1, 1}} {
		srv := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
			jsonError(w, http.StatusServiceUnavailable, "backend overloaded")
		})
		c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, Retry: retry.Policy{Attempts: tc.attempts, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}})
		_, err := c.PutXorb(context.Background(), &xorb.Xorb{Hash: fixedHash(2), Body: []byte("body")})
		if err == nil {
			t.Fatal("PutXorb succeeded against a server answering 503")
		}
		if n := srv.requests(); n != tc.want {
			t.Fatalf("Attempts %d: %d requests, want %d", tc.attempts, n, tc.want)
		}
		if !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "backend overloaded") {
			t.Fatalf("error does not name the status and message: %v", err)
		}
		if cas.StatusCode(err) != http.StatusServiceUnavailable {
			t.Fatalf("StatusCode(err) = %d", cas.StatusCode(err))
		}
	}
}

// Client errors are final: sent once, reported with their status, classified not retryable.
func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 413, 501} {
		srv := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			jsonError(w, code, "refused here")
		})
		c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, Token: cas.NewRefreshingToken("t", time.Time{}, nil), Retry: retry.Policy{Attempts: 4, BaseDelay: time.Millisecond}})
		start := time.Now()
		_, err := c.PutXorb(context.Background(), &xorb.Xorb{Hash: fixedHash(3), Body: []byte("body")})
		if err == nil {
			t.Fatalf("HTTP %d: PutXorb succeeded", code)
		}
		if n := srv.requests(); n != 1 {
			t.Fatalf("HTTP %d on a xorb upload sent %d times, want once", code, n)
		}
		if retry.IsRetryable(err) {
			t.Fatalf("HTTP %d classified retryable: %v", code, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprint(code)) || !strings.Contains(err.Error(), "refused here") {
			t.Fatalf("HTTP %d: error does not name the status and message: %v", code, err)
		}
		if took := time.Since(start); took > 900*time.Millisecond {
			t.Fatalf("HTTP %d: waited %v before failing", code, took)
		}
	}
}

// The global dedupe query treats 429 as a miss at once: no retry, no wait for Retry-After.
func TestDedupeQuery429IsAMiss(t *testing.T) {
	srv := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		jsonError(w, http.StatusTooManyRequests, "too many dedupe queries")
	})
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, Token: cas.NewRefreshingToken("t", time.Time{}, nil), Retry: retry.Policy{Attempts: 5, BaseDelay: time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	b, err := c.QueryChunk(ctx, fixedHash(4))
	if !errors.Is(err, cas.ErrNotFound) || b != nil {
		t.Fatalf("a 429 on a dedupe query gave (%d bytes, %v), want a miss (ErrNotFound)", len(b), err)
	}
	if n := srv.requests(); n != 1 {
		t.Fatalf("a 429 dedupe query was sent %d times, want once", n)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the dedupe query waited %v after a 429", took)
	}
	if p := srv.paths[0]; !strings.HasPrefix(p, "GET /v1/chunks/") || !strings.HasSuffix(p, "/"+fixedHash(4).String()) {
		t.Fatalf("dedupe query went to %q", p)
	}
}
