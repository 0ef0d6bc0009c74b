package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// paced holds request bodies to Limits.BodyMinRate (and names a body cut short, errShortBody):
// each body's reads run under a connection read deadline that moves one window on each time the
// window's quota of bytes has arrived. A client that sends slower (or stops) gets its read failed
// with errSlowBody (408), and the handler returns, freeing whatever slot it held. The deadline
// starts at the first read, not when the request arrives, so a body that waits for an upload slot
// is not timed while it waits. The body is also what an upload slot judges and cuts (slotPool:
// progress).
func (s *Server) paced(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			l := s.cfg.Limits
			quota := max(1, int64(float64(l.BodyMinRate)*l.BodyWindow.Seconds()))
			r.Body = &pacedBody{rc: r.Body, ctl: http.NewResponseController(w), window: l.BodyWindow, quota: quota}
		}
		next.ServeHTTP(w, r)
	})
}

// bodyProgress is what an upload slot sees of r's body (nil when it is not paced).
func bodyProgress(r *http.Request) progress {
	if b, ok := r.Body.(*pacedBody); ok {
		return b
	}
	return nil
}

// errSlowBody: a request body arrived slower than the server accepts.
var errSlowBody = errors.New("request body arrived too slowly")

// errSlotTaken: an upload slot was taken back from a body that would have held it long while
// another user waited (slotPool).
var errSlotTaken = errors.New("upload slot taken back: this body arrives too slowly to hold a slot while other users wait (retry)")

// errShortBody: the client ended a request body before its Content-Length.
var errShortBody = errors.New("request body ended before its Content-Length")

type pacedBody struct {
	rc      io.ReadCloser
	ctl     *http.ResponseController
	window  time.Duration
	quota   int64 // bytes each window must bring
	got     int64 // bytes in the current window
	started bool
	noDeadl bool         // the connection takes no deadlines (HTTP/2 test transports): pass through
	total   atomic.Int64 // bytes read in all (received)
	cutOff  atomic.Bool  // cut: every read fails with errSlotTaken
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.cutOff.Load() {
		return 0, errSlotTaken
	}
	if !b.started {
		b.started = true
		b.noDeadl = b.ctl.SetReadDeadline(time.Now().Add(b.window)) != nil
		b.recut()
	}
	n, err := b.rc.Read(p)
	b.got += int64(n)
	b.total.Add(int64(n))
	if b.got >= b.quota && !b.noDeadl {
		b.got = 0
		_ = b.ctl.SetReadDeadline(time.Now().Add(b.window))
		b.recut()
	}
	switch {
	case err == nil || err == io.EOF:
	case errors.Is(err, os.ErrDeadlineExceeded) && b.cutOff.Load():
		err = errSlotTaken
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = fmt.Errorf("%w: less than %d bytes in %v", errSlowBody, b.quota, b.window)
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = errShortBody
	}
	return n, err
}

// recut puts the deadline of a body cut while Read moved it back in the past. A cut sets cutOff
// before the deadline, so either its deadline comes last or Read sees cutOff here.
func (b *pacedBody) recut() {
	if b.cutOff.Load() {
		_ = b.ctl.SetReadDeadline(time.Now())
	}
}

// received is the bytes read so far (progress).
func (b *pacedBody) received() int64 { return b.total.Load() }

// cut makes the body's reads fail with errSlotTaken, a read waiting for bytes at once (progress).
// Safe from any goroutine.
func (b *pacedBody) cut() {
	b.cutOff.Store(true)
	_ = b.ctl.SetReadDeadline(time.Now())
}

func (b *pacedBody) Close() error {
	if b.started && !b.noDeadl {
		_ = b.ctl.SetReadDeadline(time.Time{})
	}
	return b.rc.Close()
}

// handleHealth answers GET /healthz: 200 while the server serves requests (no store access, so it
// answers during any load on the store or the upload slots).
func handleHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "ok\n")
}
