package cas_test

import (
	"context"
	"fmt"
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
	done := make(chan error, 1)
	go func() {
		_, err := c.Reconstruct(ctx, hash.Hash{1}, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !retry.IsRetryable(err) || !strings.Contains(err.Error(), "reconstruct") || !strings.Contains(err.Error(), "trickled") {
			t.Fatalf("a trickled plan: %v; want a retryable error naming the route and the trickle", err)
		}
	case <-time.After(30 * stall):
		t.Fatal("the call was still reading a trickled answer")
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
