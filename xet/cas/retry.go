package cas

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// StatusError is a non-2xx answer of the CAS: the operation, the HTTP status, the server's message
// (casapi.Error body or text) and, for 429/503, the Retry-After delay it asked for.
type StatusError struct {
	Op         string
	Code       int
	Message    string
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Code)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Op, e.Code, msg)
}

// Retryable reports whether the status is worth retrying: 5xx but 501, 408 and 429.
func (e *StatusError) Retryable() bool {
	switch {
	case e.Code == http.StatusNotImplemented:
		return false
	case e.Code >= 500, e.Code == http.StatusRequestTimeout, e.Code == http.StatusTooManyRequests:
		return true
	}
	return false
}

// StatusCode returns the HTTP status of err when it is (or wraps) a StatusError, else 0.
func StatusCode(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// retryPolicy says how often and how long to wait between attempts.
type retryPolicy struct {
	retries int           // retries after the first attempt
	base    time.Duration // first delay; doubles per attempt
	max     time.Duration // cap of one delay (Retry-After included)
}

// delay returns the wait before retry number n (0-based) after err: exponential with full jitter
// in [d/2, d], or the server's Retry-After when it asked for longer (capped).
func (p retryPolicy) delay(n int, err error) time.Duration {
	d := p.base << min(n, 20)
	if d <= 0 || d > p.max {
		d = p.max
	}
	d = d/2 + rand.N(d/2+1)
	var se *StatusError
	if errors.As(err, &se) && se.RetryAfter > d {
		d = min(se.RetryAfter, p.max)
	}
	return d
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// parseRetryAfter reads a Retry-After header (seconds or an HTTP date).
func parseRetryAfter(v string, now time.Time) time.Duration {
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
