package retry

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// DefaultStallTimeout: a response body that yields no byte for this long is abandoned, with a
// retryable error (a download fetches the range again). Without it a server or proxy that stops
// sending mid-body hangs a clone for ever: the transport's timeouts end with the headers.
const DefaultStallTimeout = 2 * time.Minute

// StallGuard passes rc, the body of a request whose context cancel ends, through: when no byte
// arrived for d (DefaultStallTimeout when d is not positive), it cancels the request, and the read
// fails retryably (Mark), naming what. Closing it stops the guard and cancels the request. The one
// stall rule of the project's HTTP answers: xet/cas's CAS calls, and agent/hub's Hub and token
// routes.
func StallGuard(rc io.ReadCloser, d time.Duration, cancel context.CancelFunc, what string) io.ReadCloser {
	if d <= 0 {
		d = DefaultStallTimeout
	}
	s := &stallBody{rc: rc, d: d, cancel: cancel, what: what}
	s.t = time.AfterFunc(d, func() {
		s.stalled.Store(true)
		cancel()
	})
	return s
}

// stallBody passes a response body through and cancels its request when no byte arrived for d.
type stallBody struct {
	rc      io.ReadCloser
	d       time.Duration
	t       *time.Timer
	stalled atomic.Bool
	cancel  context.CancelFunc
	what    string
}

func (s *stallBody) Read(p []byte) (int, error) {
	n, err := s.rc.Read(p)
	if n > 0 && !s.stalled.Load() {
		s.t.Reset(s.d)
	}
	if err != nil && err != io.EOF && s.stalled.Load() {
		err = Mark(fmt.Errorf("%s: no data for %v: the answer stalled", s.what, s.d))
	}
	return n, err
}

func (s *stallBody) Close() error {
	s.t.Stop()
	s.cancel()
	return s.rc.Close()
}
