package cas_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// lateCloser answers at once without reading the request body, and closes the body only later, as
// a transport still writing it after an early answer does.
type lateCloser struct {
	closedAt atomic.Int64
}

func (l *lateCloser) RoundTrip(req *http.Request) (*http.Response, error) {
	go func() {
		time.Sleep(100 * time.Millisecond)
		l.closedAt.Store(time.Now().UnixNano())
		if req.Body != nil {
			io.Copy(io.Discard, req.Body)
			req.Body.Close()
		}
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"was_inserted":true}`))}, nil
}

// PutXorb returns only once the transport let go of the body, so the caller may reuse the buffer
// (upload recycles its 64 MiB xorb buffers on that promise).
func TestPutXorbReleasesBody(t *testing.T) {
	rt := &lateCloser{}
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: rt}})
	ok, err := c.PutXorb(context.Background(), &xorb.Xorb{Hash: hash.Hash{1}, Body: make([]byte, 1000)})
	returned := time.Now().UnixNano()
	if err != nil || !ok {
		t.Fatalf("PutXorb = %v, %v", ok, err)
	}
	if closed := rt.closedAt.Load(); closed == 0 || closed > returned {
		t.Fatal("PutXorb returned before the transport closed the request body")
	}
}

// failingToken is a TokenSource whose every Token fails.
type failingToken struct{}

func (failingToken) Token(context.Context) (string, error) {
	return "", errors.New("the token route refused the credential")
}
func (failingToken) Invalidate(string) bool { return false }

// A xorb upload whose token cannot be had fails at once with the token's error: the request, and
// its body, was never sent, so there is no body to wait for.
func TestPutXorbWithoutTokenFailsAtOnce(t *testing.T) {
	var sent atomic.Int32
	rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent.Add(1)
		return nil, errors.New("not to be sent")
	})
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: "http://127.0.0.1:1", Token: failingToken{},
		HTTPClient: &http.Client{Transport: rt}, Retry: retry.Policy{Attempts: 1}})
	began := time.Now()
	_, err := c.PutXorb(context.Background(), &xorb.Xorb{Hash: hash.Hash{1}, Body: make([]byte, 1000)})
	if err == nil || !strings.Contains(err.Error(), "refused the credential") {
		t.Fatalf("PutXorb without a token: %v, want the token's error", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("PutXorb without a token took %v", took)
	}
	if sent.Load() != 0 {
		t.Fatal("a request was sent without its token")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
