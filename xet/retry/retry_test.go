package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"
)

var errFlaky = errors.New("flaky")

func TestDoStopsAtTheAttemptBudget(t *testing.T) {
	for _, attempts := range []int{1, 3, 5} {
		n := 0
		err := Policy{Attempts: attempts, BaseDelay: time.Microsecond}.Do(context.Background(), zerolog.Nop(), "op",
			func(context.Context) error { n++; return Mark(errFlaky) })
		if n != attempts || !errors.Is(err, errFlaky) {
			t.Fatalf("Attempts %d: %d calls, err %v", attempts, n, err)
		}
		if attempts > 1 && !strings.Contains(err.Error(), "after") {
			t.Errorf("Attempts %d: the error does not say how many attempts: %v", attempts, err)
		}
	}
}

func TestDoDoesNotRetryFinalErrors(t *testing.T) {
	for name, e := range map[string]error{
		"plain":     errFlaky,
		"final":     Final(Mark(errFlaky)),
		"canceled":  Mark(context.Canceled),
		"4xx class": &Error{Err: errFlaky, final: true},
	} {
		n := 0
		err := Policy{Attempts: 5, BaseDelay: time.Microsecond}.Do(context.Background(), zerolog.Nop(), "op",
			func(context.Context) error { n++; return e })
		if n != 1 || err == nil {
			t.Errorf("%s: %d calls (%v), want 1", name, n, err)
		}
	}
}

func TestDoStopsAtTheTimeBudget(t *testing.T) {
	n := 0
	start := time.Now()
	err := Policy{Attempts: 100, BaseDelay: 20 * time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxElapsed: 100 * time.Millisecond}.
		Do(context.Background(), zerolog.Nop(), "op", func(context.Context) error { n++; return Mark(errFlaky) })
	if took := time.Since(start); took > 2*time.Second || n < 2 || n > 12 {
		t.Fatalf("%d calls in %v with a 100 ms budget", n, took)
	}
	if !errors.Is(err, errFlaky) || !strings.Contains(err.Error(), "retries stopped") {
		t.Fatalf("error: %v", err)
	}
}

func TestDoStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	start := time.Now()
	err := Policy{Attempts: 10, BaseDelay: time.Hour, MaxDelay: time.Hour, MaxElapsed: 3 * time.Hour}.Do(ctx, zerolog.Nop(), "op",
		func(context.Context) error { return Mark(errFlaky) })
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %v, want context.Canceled promptly", err, time.Since(start))
	}
}

func TestDelayJitterAndCaps(t *testing.T) {
	p := Policy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for n := range 8 {
		want := min(100*time.Millisecond<<n, time.Second)
		for range 50 {
			d := p.Delay(n, errFlaky)
			if d < want/2 || d > want {
				t.Fatalf("Delay(%d) = %v, want within [%v, %v]", n, d, want/2, want)
			}
		}
	}
	// Retry-After is honoured when longer than the backoff, and capped by MaxDelay.
	if d := p.Delay(0, &Error{Err: errFlaky, Wait: 700 * time.Millisecond}); d != 700*time.Millisecond {
		t.Errorf("Delay with Retry-After 700ms = %v", d)
	}
	if d := p.Delay(0, &Error{Err: errFlaky, Wait: time.Hour}); d != time.Second {
		t.Errorf("Delay with Retry-After 1h = %v, want the 1s cap", d)
	}
}

func TestClassify(t *testing.T) {
	for code, want := range map[int]Class{
		400: Fatal, 401: Refresh, 403: Fatal, 404: Fatal, 408: Retryable, 409: Fatal, 413: Fatal,
		429: Retryable, 500: Retryable, 501: Fatal, 502: Retryable, 503: Retryable, 504: Retryable,
		507: Fatal, // a full disk: said at once, not after 5 tries (issue 19, defect 6)
	} {
		if got := Classify(code); got != want {
			t.Errorf("Classify(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":     0,
		"7":    7 * time.Second,
		"-1":   0,
		"1e9":  0,
		"9999": time.Hour,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	} {
		if got := ParseRetryAfter(v, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// Each retry is logged once, at debug level, naming the operation.
func TestRetriesAreLoggedOnceAtDebug(t *testing.T) {
	var buf logbuf.Buffer
	log := zerolog.New(&buf).Level(zerolog.DebugLevel)
	_ = Policy{Attempts: 3, BaseDelay: time.Microsecond}.Do(context.Background(), log, "fetch thing",
		func(context.Context) error { return Mark(errFlaky) })
	out := buf.String()
	if n := strings.Count(out, `"retrying"`); n != 2 {
		t.Fatalf("%d retry log lines for 3 attempts, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, `"level":"debug"`) || !strings.Contains(out, "fetch thing") {
		t.Fatalf("retry log line is not at debug level or does not name the op:\n%s", out)
	}
}

// A transport timeout marked retryable is retried although it matches context.DeadlineExceeded
// (net/http's "timeout awaiting response headers" does): a stalled server, not the caller's
// deadline.
func TestMarkedTimeoutIsRetried(t *testing.T) {
	n := 0
	err := Policy{Attempts: 3, BaseDelay: time.Microsecond}.Do(context.Background(), zerolog.Nop(), "op",
		func(context.Context) error {
			n++
			if n == 1 {
				return Mark(fmt.Errorf("post: %w", context.DeadlineExceeded))
			}
			return nil
		})
	if err != nil || n != 2 {
		t.Fatalf("%d calls, %v", n, err)
	}
}
