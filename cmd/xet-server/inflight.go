package main

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// inflight counts the main server's handlers that are running, and ends their requests' context
// on cut. http.Server.Close closes the connections but neither waits for the handlers nor ends
// the context of a request whose body is not yet read (a handler waiting for an upload slot): a
// shutdown that cuts requests needs both before it may close the store under them.
type inflight struct {
	cut  context.CancelFunc // ends every request's base context (newInflight's)
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while nobody waits for that
}

// newInflight returns a count and the base context of the requests it counts (http.Server's
// BaseContext), which its cut ends.
func newInflight() (*inflight, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	return &inflight{cut: cancel}, ctx
}

// wrap counts h's calls while they run.
func (f *inflight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
		defer f.leave()
		h.ServeHTTP(w, r)
	})
}

func (f *inflight) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

// running is the number of handlers running now.
func (f *inflight) running() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// wait waits until no handler runs, or until deadline; it returns how many still run.
func (f *inflight) wait(deadline time.Time) int {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return 0
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
	return f.running()
}
