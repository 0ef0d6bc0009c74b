package cas_test

import (
	"context"
	"errors"
	"fmt"
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

// lateReader answers at once without reading the request body, and reads it only once the call
// returned, as a transport does that was still writing it after an early answer, or that holds a
// body it took from GetBody for a retry of its own.
type lateReader struct {
	returned chan struct{}
	read     chan lateRead
}

type lateRead struct {
	n   int64
	err error
}

func (l *lateReader) RoundTrip(req *http.Request) (*http.Response, error) {
	go func() {
		<-l.returned
		n, err := io.Copy(io.Discard, req.Body)
		req.Body.Close()
		l.read <- lateRead{n, err}
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"was_inserted":true}`))}, nil
}

// PutXorb returns with the answer, and from then on the transport reads no byte of the body: the
// caller reuses the buffer at once (upload recycles its 64 MiB xorb buffers on that promise; the
// race detector sees a read of the buffer after the return). It used to wait for the transport to
// close the body, a minute, and fail.
func TestPutXorbTakesBodyBack(t *testing.T) {
	rt := &lateReader{returned: make(chan struct{}), read: make(chan lateRead, 1)}
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: rt},
		Retry: retry.Policy{Attempts: 1}})
	x := &xorb.Xorb{Hash: hash.Hash{1}, Body: make([]byte, 1000)}
	ok, err := c.PutXorb(context.Background(), x)
	if err != nil || !ok {
		t.Fatalf("PutXorb = %v, %v", ok, err)
	}
	for i := range x.Body {
		x.Body[i] = 0xff // the next xorb
	}
	close(rt.returned)
	if r := <-rt.read; r.n != 0 || r.err == nil {
		t.Fatalf("the transport read %d bytes of the body after PutXorb returned (%v), want none and an error", r.n, r.err)
	}
}

// An early error answer (503: the server is busy) while the transport still holds the body reaches
// the retry policy at once, and the next attempt is sent.
func TestPutXorbEarlyAnswerRetried(t *testing.T) {
	var attempts atomic.Int32
	held := make(chan io.ReadCloser, 1)
	rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if attempts.Add(1) == 1 {
			held <- req.Body // never read nor closed
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Request: req,
				Body: io.NopCloser(strings.NewReader("busy"))}, nil
		}
		n, err := io.Copy(io.Discard, req.Body)
		if err != nil || n != 1000 {
			return nil, fmt.Errorf("read %d bytes of the body: %v", n, err)
		}
		return &http.Response{StatusCode: 200, Header: http.Header{}, Request: req,
			Body: io.NopCloser(strings.NewReader(`{"was_inserted":true}`))}, nil
	})
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: rt},
		Retry: retry.Policy{Attempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})
	ok, err := c.PutXorb(context.Background(), &xorb.Xorb{Hash: hash.Hash{1}, Body: make([]byte, 1000)})
	if err != nil || !ok {
		t.Fatalf("PutXorb after a 503 = %v, %v", ok, err)
	}
	if n := attempts.Load(); n != 2 {
		t.Fatalf("%d attempts, want 2 (the 503, then the upload)", n)
	}
	if n, err := (<-held).Read(make([]byte, 10)); n != 0 || err == nil {
		t.Fatalf("the held body still read %d bytes (%v) after the call", n, err)
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
