package retry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"sync/atomic"
	"time"
)

// QueuedStalls bounds, in stall times, how long interim answers may keep a request whose body
// the server does not read: a server that says "queued" for ever would otherwise hold the upload
// for ever, as one that trickles an answer would. At the default stall time that is half an hour,
// far past any fair queue of xet-server's (a slot goes to the user holding the fewest, and a slow
// holder beyond its share is cut).
const QueuedStalls = 15

// Sending watches the sending of a request's body (SendGuard).
type Sending struct {
	d      time.Duration
	cancel context.CancelFunc
	began  time.Time
	idle   *time.Timer
	why    atomic.Pointer[string]

	mu   sync.Mutex
	done bool
}

// SendGuard watches the sending of req's body, for a request whose context cancel ends. When the
// transport takes no byte of the body for d (DefaultStallTimeout when d is not positive), and the
// server sends no interim answer meanwhile, it cancels the request: a server, or anything between,
// that stops reading an upload holds it for ever otherwise (the transport has no write timeout,
// and its wait for the answer's headers starts once the body is sent). An interim answer (1xx:
// xet-server's 102 Processing while an upload waits for a slot) counts as progress, for at most
// QueuedStalls times d from the start. The guard ends once the transport has written the whole request (the
// answer's rules take over: the transport's header timeout, then StallGuard) or at Done.
//
// The caller sends the request returned, calls Done when the transport's Do returns, and words an
// error of that Do with Err.
func SendGuard(req *http.Request, d time.Duration, cancel context.CancelFunc) (*http.Request, *Sending) {
	if d <= 0 {
		d = DefaultStallTimeout
	}
	s := &Sending{d: d, cancel: cancel, began: time.Now()}
	s.idle = time.AfterFunc(d, func() {
		s.stop(fmt.Sprintf("the server took no byte of the request's body for %v: the upload stalled", d))
	})
	trace := &httptrace.ClientTrace{
		Got1xxResponse: func(int, textproto.MIMEHeader) error {
			if s.ended() {
				return nil // after the body: the transport's header timeout bounds the wait
			}
			if most := QueuedStalls * d; time.Since(s.began) > most {
				why := fmt.Sprintf("the server kept the upload queued, unread, for more than %v", most)
				s.stop(why)
				return fmt.Errorf("%s", why)
			}
			s.progress()
			return nil
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil { // a failed write may be sent again (GetBody): still guarded
				s.Done()
			}
		},
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &sendBody{req.Body, s}
	}
	if get := req.GetBody; get != nil {
		req.GetBody = func() (io.ReadCloser, error) {
			rc, err := get()
			if err != nil || rc == nil || rc == http.NoBody {
				return rc, err
			}
			return &sendBody{rc, s}, nil
		}
	}
	return req, s
}

// progress restarts the wait for the next byte taken or interim answer.
func (s *Sending) progress() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done && s.why.Load() == nil {
		s.idle.Reset(s.d)
	}
}

func (s *Sending) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// stop records why the sending is abandoned (the first reason) and cancels the request.
func (s *Sending) stop(why string) {
	if s.why.CompareAndSwap(nil, &why) {
		s.cancel()
	}
}

// Done ends the guard: the request is written, or its Do returned. Safe on nil and more than once.
func (s *Sending) Done() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	s.idle.Stop()
}

// Err is err, the error of the Do the guard watched, worded as the guard's own when it cancelled
// the request (retryable, naming what and the rule), else err unchanged.
func (s *Sending) Err(what string, err error) error {
	if s == nil || err == nil {
		return err
	}
	if why := s.why.Load(); why != nil {
		return Mark(fmt.Errorf("%s: %s", what, *why))
	}
	return err
}

// sendBody passes a request body through, telling its guard of each byte the transport takes.
type sendBody struct {
	rc io.ReadCloser
	s  *Sending
}

func (b *sendBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.s.progress()
	}
	return n, err
}

func (b *sendBody) Close() error { return b.rc.Close() }
