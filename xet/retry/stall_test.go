package retry

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// paced is an answer's body that gives n bytes every interval until total bytes (0: for ever), and
// fails as a cancelled request's body does once ctx ends.
type paced struct {
	ctx      context.Context
	n        int
	interval time.Duration
	total    int
	sent     int
}

func (p *paced) Read(b []byte) (int, error) {
	if p.total > 0 && p.sent >= p.total {
		return 0, io.EOF
	}
	select {
	case <-p.ctx.Done():
		return 0, p.ctx.Err()
	case <-time.After(p.interval):
	}
	n := min(p.n, len(b))
	if p.total > 0 {
		n = min(n, p.total-p.sent)
	}
	p.sent += n
	return n, nil
}

func (p *paced) Close() error { return nil }

// readGuarded reads body through a guard of stall d (an answer's, or a stream of heartbeats'), and
// returns what the read ended with, or fails the test when it has not ended within limit.
func readGuarded(t *testing.T, guard func(io.ReadCloser, time.Duration, context.CancelFunc, string) io.ReadCloser,
	d time.Duration, body func(context.Context) io.ReadCloser, limit time.Duration) (int64, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc := guard(body(ctx), d, cancel, "GET /answer")
	defer rc.Close()
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := io.Copy(io.Discard, rc)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-time.After(limit):
		cancel() // ends the reader, which the deferred Close then joins through done
		<-done
		t.Fatalf("the read had not ended after %v", limit)
		return 0, nil
	}
}

// A server that sends a byte now and then, each just inside the stall time, held an answer open
// for ever: no gap was ever long enough to count as a stall. An answer that averages less than
// MinRate over a stall window is abandoned too, retryably, and the error says why.
func TestStallGuardEndsATrickle(t *testing.T) {
	const d = 300 * time.Millisecond
	trickle := func(ctx context.Context) io.ReadCloser { return &paced{ctx: ctx, n: 1, interval: d / 6} } // 20 B/s, for ever
	n, err := readGuarded(t, StallGuard, d, trickle, 20*d)
	if err == nil || !IsRetryable(err) || !strings.Contains(err.Error(), "GET /answer") || !strings.Contains(err.Error(), "trickled") {
		t.Fatalf("a trickling answer ended with %v after %d bytes; want a retryable error naming the answer and the trickle", err, n)
	}
}

// An answer slow but above MinRate, and one that is quick and small, are read whole.
func TestStallGuardKeepsASlowLink(t *testing.T) {
	const d = 300 * time.Millisecond
	perWindow := int(MinRate * d / time.Second)
	slow := func(ctx context.Context) io.ReadCloser { // twice MinRate, for four windows
		return &paced{ctx: ctx, n: perWindow / 2, interval: d / 4, total: 8 * perWindow}
	}
	if n, err := readGuarded(t, StallGuard, d, slow, time.Minute); err != nil || n != int64(8*perWindow) {
		t.Fatalf("an answer at twice the floor: %d bytes, %v", n, err)
	}
	small := func(ctx context.Context) io.ReadCloser { return &paced{ctx: ctx, n: 10, interval: d / 3, total: 20} }
	if n, err := readGuarded(t, StallGuard, d, small, time.Minute); err != nil || n != 20 {
		t.Fatalf("a 20-byte answer done inside the first window: %d bytes, %v", n, err)
	}
}

// A stream of heartbeats (the frames of POST /v2/shards while the server registers a shard) is
// held to the no-byte rule only: its bytes are few by design.
func TestStreamGuardKeepsHeartbeats(t *testing.T) {
	const d = 300 * time.Millisecond
	beats := func(ctx context.Context) io.ReadCloser { return &paced{ctx: ctx, n: 30, interval: d / 3, total: 300} }
	if n, err := readGuarded(t, StreamGuard, d, beats, time.Minute); err != nil || n != 300 {
		t.Fatalf("heartbeats every third of the stall time: %d bytes, %v", n, err)
	}
	silent := func(ctx context.Context) io.ReadCloser { return &paced{ctx: ctx, n: 1, interval: time.Hour} }
	_, err := readGuarded(t, StreamGuard, d, silent, 20*d)
	if err == nil || !IsRetryable(err) || !strings.Contains(err.Error(), "stalled") {
		t.Fatalf("a silent stream ended with %v; want the stall", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatalf("the stall error wraps the cancel: %v", err)
	}
}
