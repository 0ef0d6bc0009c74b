package cas_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// syncBuffer is a log sink safe for the client's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const secretToken = "hf_SeCrEt_bearer_0123456789abcdef"

// failEverything is a client of a server failing every route in its own way, logging at trace
// level into logs; it returns the errors of one call of each method.
func failEverything(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) (errs []error, logs string) {
	t.Helper()
	srv := newScripted(t, answer)
	var buf syncBuffer
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, Token: cas.NewRefreshingToken(secretToken, time.Time{}, nil), SessionID: "s",
		Retry: retry.Policy{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
		Log:   zerolog.New(&buf).Level(zerolog.TraceLevel)})
	ctx := context.Background()
	_, err := c.QueryChunk(ctx, fixedHash(10))
	errs = append(errs, err)
	_, err = c.PutXorb(ctx, &xorb.Xorb{Hash: fixedHash(11), Body: []byte("xorb")})
	errs = append(errs, err)
	errs = append(errs, c.PutShard(ctx, []byte("shard")))
	_, err = c.Reconstruct(ctx, fixedHash(12), nil)
	errs = append(errs, err)
	rc, err := c.Fetch(ctx, fixedHash(13), casapi.XorbFetch{URL: srv.URL + "/xorbs/default/x?sig=1"}, casapi.ByteRange{Start: 0, End: 9})
	if rc != nil {
		_, _ = io.Copy(io.Discard, rc)
		rc.Close()
	}
	errs = append(errs, err)
	return errs, buf.String()
}

func checkNoToken(t *testing.T, errs []error, logs string) {
	t.Helper()
	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d succeeded against a failing server", i)
			continue
		}
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(s, secretToken) {
				t.Errorf("call %d: the bearer token is in the error: %s", i, s)
			}
		}
	}
	// Not even the start of it (a message cut at some length must be redacted before the cut).
	prefix := secretToken[:12]
	for i, err := range errs {
		if err != nil && strings.Contains(err.Error(), prefix) {
			t.Errorf("call %d: a piece of the bearer token is in the error: %v", i, err)
		}
	}
	if strings.Contains(logs, prefix) {
		t.Errorf("a piece of the bearer token is in the log:\n%s", logs)
	}
	if strings.Contains(logs, secretToken) {
		t.Errorf("the bearer token is in the log:\n%s", logs)
	}
	if logs == "" {
		t.Error("nothing was logged: the test would not see a token in the log")
	}
}

// The bearer token never reaches error messages or logs, whatever fails.
func TestTokenNotInErrorsOrLogs(t *testing.T) {
	codes := []int{500, 401, 403, 404, 429, 503}
	errs, logs := failEverything(t, func(n int, w http.ResponseWriter, r *http.Request) {
		jsonError(w, codes[n%len(codes)], "request refused")
	})
	checkNoToken(t, errs, logs)
}

// A server (or proxy) that echoes the request's Authorization header in its error body must not
// get the token into the client's errors and logs either: the client surfaces server messages.
func TestEchoedTokenNotInErrorsOrLogs(t *testing.T) {
	errs, logs := failEverything(t, func(n int, w http.ResponseWriter, r *http.Request) {
		code := []int{400, 500, 403}[n%3]
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(code)
		fmt.Fprintf(w, "rejected request %s %s with headers Authorization: %s", r.Method, r.URL.Path, r.Header.Get("Authorization"))
	})
	checkNoToken(t, errs, logs)
}

// Same, with the token where a long message gets cut (the client keeps the first few hundred
// characters of a server message).
func TestEchoedTokenAtMessageCut(t *testing.T) {
	for _, pad := range []int{490, 500, 505, 511} {
		errs, logs := failEverything(t, func(n int, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader([]int{400, 500, 403}[n%3])
			fmt.Fprintf(w, "%s%s and more text after it", strings.Repeat("x", pad), r.Header.Get("Authorization"))
		})
		checkNoToken(t, errs, logs)
	}
}

// Every CAS route gets the User-Agent, the session id and the bearer token; a signed xorb URL gets
// the User-Agent but never the token (it goes to another host).
func TestRequestHeaders(t *testing.T) {
	type seen struct{ path, ua, session, auth string }
	var mu sync.Mutex
	var got []seen
	srv := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{r.URL.Path, r.Header.Get("User-Agent"), r.Header.Get(lfsbatch.HeaderSessionID), r.Header.Get("Authorization")})
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/chunks/"):
			jsonError(w, http.StatusNotFound, "no such chunk")
		case strings.HasPrefix(r.URL.Path, "/v1/xorbs/"):
			fmt.Fprintln(w, `{"was_inserted":true}`)
		case r.URL.Path == "/v2/shards":
			fmt.Fprintln(w, `{"type":"validating","verified":1,"total":1}`)
			fmt.Fprintln(w, `{"type":"result","result":1}`)
		case strings.HasPrefix(r.URL.Path, "/v2/reconstructions/"):
			fmt.Fprintln(w, `{"offset_into_first_range":0,"terms":[],"xorbs":{}}`)
		case strings.HasPrefix(r.URL.Path, "/signed/"):
			w.Header().Set("Content-Range", "bytes 0-3/100")
			w.Header().Set("Content-Length", "4")
			w.WriteHeader(http.StatusPartialContent)
			io.WriteString(w, "abcd")
		default:
			jsonError(w, http.StatusTeapot, "unexpected route")
		}
	})
	for _, ua := range []string{"my-agent/1.2 (test)", ""} {
		mu.Lock()
		got = nil
		mu.Unlock()
		c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, Token: cas.NewRefreshingToken(secretToken, time.Time{}, nil), SessionID: "sess-123",
			UserAgent: ua, Retry: retry.Policy{Attempts: 1}})
		ctx := context.Background()
		if _, err := c.QueryChunk(ctx, fixedHash(20)); err == nil {
			t.Fatal("dedupe query: want a miss")
		}
		if _, err := c.PutXorb(ctx, &xorb.Xorb{Hash: fixedHash(21), Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if err := c.PutShard(ctx, []byte("s")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Reconstruct(ctx, fixedHash(22), nil); err != nil {
			t.Fatal(err)
		}
		rc, err := c.Fetch(ctx, fixedHash(23), casapi.XorbFetch{URL: srv.URL + "/signed/x?sig=abc"}, casapi.ByteRange{Start: 0, End: 3})
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(rc); err != nil || string(b) != "abcd" {
			t.Fatalf("fetch body %q, %v", b, err)
		}
		rc.Close()

		wantUA := ua
		if ua == "" {
			wantUA = cas.DefaultUserAgent()
			if !strings.HasPrefix(wantUA, "git-xet-transfer/") {
				t.Fatalf("default User-Agent %q", wantUA)
			}
		}
		mu.Lock()
		if len(got) != 5 {
			t.Fatalf("%d requests, want 5: %+v", len(got), got)
		}
		for _, s := range got {
			if s.ua != wantUA {
				t.Errorf("%s: User-Agent %q, want %q", s.path, s.ua, wantUA)
			}
			if strings.HasPrefix(s.path, "/signed/") {
				if s.auth != "" {
					t.Errorf("the signed xorb URL got an Authorization header")
				}
				continue
			}
			if s.session != "sess-123" {
				t.Errorf("%s: %s %q, want sess-123", s.path, lfsbatch.HeaderSessionID, s.session)
			}
			if s.auth != "Bearer "+secretToken {
				t.Errorf("%s: Authorization %q", s.path, s.auth)
			}
		}
		mu.Unlock()
	}
}
