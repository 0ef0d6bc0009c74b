package retry

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStallTimeout: a response body that yields no byte for this long is abandoned, with a
// retryable error (a download fetches the range again). Without it a server or proxy that stops
// sending mid-body hangs a clone for ever: the transport's timeouts end with the headers.
const DefaultStallTimeout = 2 * time.Minute

// MinRate is the floor, in bytes a second, of an answer still arriving: one that averages less
// over a stall window is abandoned as a stalled one is. Without it a server that sends a byte now
// and then, each inside the stall time, holds an answer open for ever (a 64 MiB range at one byte
// a minute). At the default stall time the floor asks for 120 KiB in two minutes: a 1 Mbit/s line
// shared by a hundred transfers gives each more. An answer done within its first window is never
// measured.
const MinRate = 1 << 10

// StallGuard passes rc, the body of a request whose context cancel ends, through: when no byte
// arrived for d (DefaultStallTimeout when d is not positive), or fewer than MinRate a second on
// average over a window of d while bytes still come (silent for half the window, it is left to
// the first rule), it cancels the request, and the read fails retryably (Mark), naming what and
// which rule. Closing it, or reading it to its end, stops the guard; Close also cancels
// the request. The one stall rule of the project's HTTP answers: xet/cas's CAS calls, and
// agent/hub's Hub and token routes.
func StallGuard(rc io.ReadCloser, d time.Duration, cancel context.CancelFunc, what string) io.ReadCloser {
	return guard(rc, d, MinRate, cancel, what)
}

// StreamGuard is StallGuard without the floor, for an answer whose bytes are few by design: the
// heartbeats of POST /v2/shards while the server registers a shard.
func StreamGuard(rc io.ReadCloser, d time.Duration, cancel context.CancelFunc, what string) io.ReadCloser {
	return guard(rc, d, 0, cancel, what)
}

func guard(rc io.ReadCloser, d time.Duration, minRate int64, cancel context.CancelFunc, what string) io.ReadCloser {
	if d <= 0 {
		d = DefaultStallTimeout
	}
	s := &stallBody{rc: rc, d: d, cancel: cancel, what: what, minRate: minRate}
	s.last.Store(time.Now().UnixNano())
	s.idle = time.AfterFunc(d, func() { s.stop(fmt.Sprintf("no data for %v: the answer stalled", d)) })
	if s.need() > 0 {
		s.mu.Lock()
		s.floor = time.AfterFunc(d, s.window)
		s.mu.Unlock()
	}
	return s
}

// stallBody passes a response body through and cancels its request when a rule of guard's trips.
type stallBody struct {
	rc       io.ReadCloser
	d        time.Duration
	minRate  int64        // the floor in bytes a second; 0: none
	idle     *time.Timer  // no byte for d
	inWindow atomic.Int64 // bytes in the current window of the floor
	last     atomic.Int64 // when the last byte arrived, in Unix nanoseconds
	cancel   context.CancelFunc
	what     string
	why      atomic.Pointer[string] // the rule that tripped; nil while none has

	mu    sync.Mutex
	floor *time.Timer // the floor's window; nil without one
	ended bool        // read to its end or closed: the timers are stopped for good
}

// need is how many bytes a window of the floor must bring (0: no floor).
func (s *stallBody) need() int64 { return s.minRate * int64(s.d) / int64(time.Second) }

// window ends a window of the floor: the answer is abandoned if it brought too few bytes, else
// the next window starts.
func (s *stallBody) window() {
	// An answer silent for half the window is stalling, not trickling: the idle rule ends it
	// within the other half, under its own name.
	if got := s.inWindow.Swap(0); got < s.need() && time.Since(time.Unix(0, s.last.Load())) < s.d/2 {
		s.stop(fmt.Sprintf("%d bytes in %v, under %d a second: the answer trickled", got, s.d, s.minRate))
		return
	}
	s.mu.Lock()
	if !s.ended {
		s.floor.Reset(s.d)
	}
	s.mu.Unlock()
}

// stop records why the answer is abandoned (the first rule to trip) and cancels its request.
func (s *stallBody) stop(why string) {
	if s.why.CompareAndSwap(nil, &why) {
		s.cancel()
	}
}

// end stops both rules: the answer is read whole, or its reader gave up on it.
func (s *stallBody) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	s.idle.Stop()
	if s.floor != nil {
		s.floor.Stop()
	}
}

func (s *stallBody) Read(p []byte) (int, error) {
	n, err := s.rc.Read(p)
	if n > 0 && s.why.Load() == nil {
		s.idle.Reset(s.d)
		s.inWindow.Add(int64(n))
		s.last.Store(time.Now().UnixNano())
	}
	if err == io.EOF {
		s.end()
	}
	if why := s.why.Load(); err != nil && err != io.EOF && why != nil {
		err = Mark(fmt.Errorf("%s: %s", s.what, *why))
	}
	return n, err
}

func (s *stallBody) Close() error {
	s.end()
	s.cancel()
	return s.rc.Close()
}
