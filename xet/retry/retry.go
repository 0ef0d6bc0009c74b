// Package retry is the project's one retry policy: which failures are worth another attempt, how
// long to wait before it, and when to stop.
//
// Exactly one layer retries each kind of request, so that a failure costs at most one budget of
// attempts, never the product of several layers' budgets (how many requests are in flight is
// xet/concurrency's, told of each failed attempt):
//
//	request                                        retried by
//	CAS routes: reconstruction, dedupe query,      xet/cas (HTTP.do), per call; a 401 refreshes the
//	  xorb upload, shard upload                      token and resends once, within the attempt
//	token refresh (the LFS server's href)          the CAS call that needed the token (no retry of
//	                                                 its own)
//	xorb range fetch (signed URL or the store)     xet/download (runJobs), per range: a truncated
//	                                                 body is seen only while decoding it, so
//	                                                 cas.HTTP.Fetch makes one attempt; the next
//	                                                 asks for the rest of the range, from the
//	                                                 record the cut fell in
//	LFS batch API                                  git-lfs itself
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Policy is a retry budget. Zero fields take the defaults.
type Policy struct {
	// Attempts is the most attempts in all, the first included; default 5. 1 means no retry.
	Attempts int
	// MaxElapsed ends retrying once this much time has passed since the first attempt began (an
	// attempt running at that moment still finishes); default 5 minutes.
	MaxElapsed time.Duration
	// BaseDelay is the first backoff delay, doubled for each later one; default 1 s.
	BaseDelay time.Duration
	// MaxDelay caps one delay, a server's Retry-After included; default 60 s.
	MaxDelay time.Duration
}

// Defaults of Policy.
const (
	DefaultAttempts   = 5
	DefaultMaxElapsed = 5 * time.Minute
	DefaultBaseDelay  = time.Second
	DefaultMaxDelay   = 60 * time.Second
)

func (p Policy) withDefaults() Policy {
	if p.Attempts <= 0 {
		p.Attempts = DefaultAttempts
	}
	if p.MaxElapsed <= 0 {
		p.MaxElapsed = DefaultMaxElapsed
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	return p
}

// Delay returns the wait before retry number n (0-based) after err: exponential backoff with jitter
// in [d/2, d] for d = BaseDelay·2ⁿ capped at MaxDelay, or the server's Retry-After (see After) when
// it asked for longer, capped at MaxDelay too.
func (p Policy) Delay(n int, err error) time.Duration {
	p = p.withDefaults()
	d := p.BaseDelay << min(n, 20)
	if d <= 0 || d > p.MaxDelay {
		d = p.MaxDelay
	}
	d = d/2 + rand.N(d/2+1)
	if ra := After(err); ra > d {
		d = min(ra, p.MaxDelay)
	}
	return d
}

// Do runs f until it succeeds, fails with an error that is not retryable (IsRetryable), the budget
// is spent (attempts or elapsed time), or ctx ends. Each retry is logged once, at debug level, with
// op (which must hold no secret). The error returned is f's last, with the attempt count when
// there was more than one; ctx's error when ctx ended.
func (p Policy) Do(ctx context.Context, log zerolog.Logger, op string, f func(ctx context.Context) error) error {
	p = p.withDefaults()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !IsRetryable(err) || attempt >= p.Attempts {
			return withAttempts(err, attempt)
		}
		d := p.Delay(attempt-1, err)
		if time.Since(start)+d > p.MaxElapsed {
			return withAttempts(fmt.Errorf("%w (retries stopped after %v)", err, p.MaxElapsed), attempt)
		}
		log.Debug().Str("op", op).Int("attempt", attempt).Dur("wait", d).Err(err).Msg("retrying")
		if err := Sleep(ctx, d); err != nil {
			return err
		}
	}
}

func withAttempts(err error, n int) error {
	if n > 1 {
		return fmt.Errorf("%w (after %d attempts)", err, n)
	}
	return err
}

// Sleep waits d or until ctx is done (ctx's error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Class is what a caller does about an HTTP status.
type Class int

const (
	// Fatal: the answer stands; trying again would get it again (4xx, 501, and 507: a full disk
	// is not freed in the seconds a retry waits, and the user must see it at once).
	Fatal Class = iota
	// Retryable: the server or the path to it failed for now (5xx but 501 and 507, 408, 429).
	Retryable
	// Refresh: the credential was refused (401); get a new one and send again, once.
	Refresh
)

// Classify is the one classification of HTTP statuses. 2xx and 3xx are Fatal too: a caller asks
// only about statuses it did not accept. A route whose answer is meaningful (a 404 that says "not
// here") decides that before asking.
func Classify(code int) Class {
	switch {
	case code == http.StatusUnauthorized:
		return Refresh
	case code == http.StatusNotImplemented, code == http.StatusInsufficientStorage:
		return Fatal
	case code >= 500, code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return Retryable
	}
	return Fatal
}

// Error marks Err as worth retrying (a broken connection, a truncated body, a retryable status),
// with the wait the server asked for, if any.
type Error struct {
	Err   error
	Wait  time.Duration // the server's Retry-After; 0 when it said nothing
	final bool          // Final: not retryable after all
}

func (e *Error) Error() string   { return e.Err.Error() }
func (e *Error) Unwrap() error   { return e.Err }
func (e *Error) Retryable() bool { return !e.final }

// RetryAfter returns the wait the server asked for.
func (e *Error) RetryAfter() time.Duration { return e.Wait }

// Final wraps err so that IsRetryable says no, whatever err wraps (a route for which a status that
// is usually retryable is an answer). nil stays nil.
func Final(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, final: true}
}

// Mark wraps err as retryable (nil stays nil).
func Mark(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err}
}

// IsRetryable reports whether err is worth another attempt: some error in its chain says so (a
// Retryable() bool method: Error, or a status error). Cancellation never is; a deadline only when
// marked (a transport timeout the caller marked, not the caller's own deadline).
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	// A deadline is decided by the mark: net/http's "timeout awaiting response headers" matches
	// context.DeadlineExceeded, but it is the server's stall, not the caller's deadline (Do checks
	// the caller's context itself).
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	return false
}

// After returns the wait a server asked for with Retry-After, when an error in err's chain carries
// one (a RetryAfter() time.Duration method), else 0.
func After(err error) time.Duration {
	var r interface{ RetryAfter() time.Duration }
	if errors.As(err, &r) {
		return r.RetryAfter()
	}
	return 0
}

// ParseRetryAfter reads a Retry-After header: seconds or an HTTP date, at most an hour.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, 3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, time.Hour)
		}
	}
	return 0
}
