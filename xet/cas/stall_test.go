package cas_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// A server that sends its answer a few bytes at a time, each just inside the stall time, held a
// call open for as long as the answer lasted (a 64 MiB plan at 20 bytes a second: 39 days). The
// call is now abandoned within a window or two of the stall time, retryably, naming the route.
func TestTrickledAnswerIsAbandoned(t *testing.T) {
	const stall = 300 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		fmt.Fprint(w, `{"offset_into_first_range":0,"terms":[`)
		for {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(stall / 6):
			}
			if _, err := fmt.Fprint(w, " "); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, StallTimeout: stall, Retry: retry.Policy{Attempts: 1}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before srv.Close (deferred first), which waits for the handler
	err := endsWithin(t, 30*stall, "reading a trickled answer", func() error {
		_, err := c.Reconstruct(ctx, hash.Hash{1}, nil)
		return err
	})
	if err == nil || !retry.IsRetryable(err) || !strings.Contains(err.Error(), "reconstruct") || !strings.Contains(err.Error(), "trickled") {
		t.Fatalf("a trickled plan: %v; want a retryable error naming the route and the trickle", err)
	}
}

// endsWithin runs call and returns its error, failing the test if it has not ended within d (it
// was still doing what doing says).
func endsWithin(t *testing.T, d time.Duration, doing string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("the call was still %s after %v", doing, d)
		return nil
	}
}

// POST /v2/shards answers with heartbeats while the server registers the shard: few bytes by design,
// under the floor, which must not end the registration (only silence does).
func TestShardHeartbeatsUnderTheFloorAreKept(t *testing.T) {
	const stall = 300 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/shards" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(200)
		for range 12 { // 1.2 s of heartbeats, four stall windows
			fmt.Fprintln(w, `{"type":"validating","verified":0,"total":1}`)
			w.(http.Flusher).Flush()
			time.Sleep(stall / 3)
		}
		fmt.Fprintln(w, `{"type":"result","result":1}`)
	}))
	defer srv.Close()
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, StallTimeout: stall, Retry: retry.Policy{Attempts: 1}})
	if err := c.PutShard(context.Background(), testutil.RandomBytes(100, 1)); err != nil {
		t.Fatalf("a registration sending heartbeats: %v", err)
	}
}

// bigBody is larger than what loopback's socket buffers hold (a few MiB each side): a server that
// reads none of it leaves the sender blocked in its write.
const bigBody = 32 << 20

// A server that takes the request but never reads its body held the upload for ever: Go's
// transport has no write timeout, and the wait for the answer's headers starts only once the body
// is sent. The call is now abandoned after the stall time without a byte taken, retryably, naming
// the route and the rule.
func TestUnreadUploadIsAbandoned(t *testing.T) {
	const stall = 300 * time.Millisecond
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // the connection's end is not seen while its body is unread
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release) // before srv.Close, which waits for the handler
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, StallTimeout: stall, Retry: retry.Policy{Attempts: 1}})
	err := endsWithin(t, 30*stall, "waiting on a server that reads none of the upload", func() error {
		return c.PutShard(context.Background(), testutil.RandomBytes(bigBody, 1))
	})
	if err == nil || !retry.IsRetryable(err) || !strings.Contains(err.Error(), "upload shard") || !strings.Contains(err.Error(), "took no byte") {
		t.Fatalf("an upload the server does not read: %v; want a retryable error naming the route and the rule", err)
	}
}

// An upload a server keeps unread while it says, with interim answers (102 Processing), that the
// upload waits its turn (xet-server's slots) is kept past the stall time, and sent once the server
// reads it.
func TestQueuedUploadIsKept(t *testing.T) {
	const stall = 300 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 12 { // 1.2 s queued, four stall windows
			w.WriteHeader(http.StatusProcessing)
			time.Sleep(stall / 3)
		}
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil || n != bigBody {
			http.Error(w, fmt.Sprintf("read %d bytes: %v", n, err), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, `{"type":"result","result":1}`)
	}))
	defer srv.Close()
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, StallTimeout: stall, Retry: retry.Policy{Attempts: 1}})
	if err := c.PutShard(context.Background(), testutil.RandomBytes(bigBody, 1)); err != nil {
		t.Fatalf("an upload queued with interim answers: %v", err)
	}
}

// A server that says "queued" for ever holds the upload no longer than retry.QueuedStalls stall
// times.
func TestQueuedForEverIsAbandoned(t *testing.T) {
	const stall = 100 * time.Millisecond
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for {
			w.WriteHeader(http.StatusProcessing)
			select {
			case <-release:
				return
			case <-time.After(stall / 3):
			}
		}
	}))
	defer srv.Close()
	defer close(release)
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, StallTimeout: stall, Retry: retry.Policy{Attempts: 1}})
	err := endsWithin(t, 30*time.Second, "queued", func() error {
		return c.PutShard(context.Background(), testutil.RandomBytes(bigBody, 1))
	})
	if err == nil || !retry.IsRetryable(err) || !strings.Contains(err.Error(), "queued") {
		t.Fatalf("an upload queued for ever: %v; want a retryable error saying it stayed queued", err)
	}
}
