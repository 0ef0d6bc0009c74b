package cas

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// StatusError is a non-2xx answer of the CAS: the operation, the HTTP status, the server's message
// (casapi.Error body or text) and, for 429/503, the Retry-After delay it asked for.
type StatusError struct {
	Op      string
	Code    int
	Message string
	Wait    time.Duration // Retry-After
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Code)
	} else if e.Code == http.StatusInsufficientStorage || e.Code == http.StatusRequestEntityTooLarge {
		// A quota or size refusal: the server's message is what the user must read first.
		return fmt.Sprintf("%s (HTTP %d from %s)", msg, e.Code, e.Op)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Op, e.Code, msg)
}

// Retryable reports whether the status is worth retrying (retry.Classify).
func (e *StatusError) Retryable() bool { return retry.Classify(e.Code) == retry.Retryable }

// RetryAfter is the wait the server asked for (429, 503), for retry.Policy.Delay.
func (e *StatusError) RetryAfter() time.Duration { return e.Wait }

// StatusCode returns the HTTP status of err when it is (or wraps) a StatusError, else 0.
func StatusCode(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}
