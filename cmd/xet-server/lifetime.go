package main

import (
	"context"
	"sync"
	"time"
)

// lifetime owns the goroutines of one server run: the listeners' serve loops, temp cleaning,
// SIGHUP reloads, the certificate poll and in-process gc. Each gets the run's context, which ends
// at SIGINT/SIGTERM (or when the run stops for another reason), and join waits for them all, so
// that the store is closed only once nothing of the run can touch it.
type lifetime struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{} // closed when every goroutine has ended (join)
	once   sync.Once
}

// newLifetime starts a run's lifetime under parent: its goroutines stop when parent ends or at
// stop.
func newLifetime(parent context.Context) (*lifetime, context.Context) {
	ctx, cancel := context.WithCancel(parent)
	return &lifetime{cancel: cancel, done: make(chan struct{})}, ctx
}

// Go runs fn on a goroutine of the lifetime. fn returns once the lifetime's context ends (or,
// for a listener's serve loop, once its server is shut down).
func (l *lifetime) Go(fn func()) { l.wg.Go(fn) }

// join ends the lifetime's context and waits for its goroutines until deadline; false: some still
// run (a gc stuck in a storage call), and the store must be left as a killed process leaves it.
func (l *lifetime) join(deadline time.Time) bool {
	l.cancel()
	l.once.Do(func() {
		go func() { // the one goroutine that outlives a failed join: the process exits then
			l.wg.Wait()
			close(l.done)
		}()
	})
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-l.done:
		return true
	case <-t.C:
		return false
	}
}
