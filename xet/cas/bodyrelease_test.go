package cas_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
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
