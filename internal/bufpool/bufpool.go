// Package bufpool holds Pool: large buffers kept for reuse while they are being used, and let go
// once they are not.
//
// A process that needs 64 MiB buffers now and then (xorb bodies built by an upload, xorb bodies
// received by the server) pays for a fresh one in page faults and zeroing, about a second of CPU
// per GiB on a small VM, where a recycled one is already mapped. sync.Pool is no help at that size:
// it empties at every GC. A Pool keeps at most Keep idle buffers, and releases all of them when none
// was returned for Idle, so an idle process does not hold them.
package bufpool

import (
	"sync"
	"time"
)

// Pool keeps buffers returned by Put for Get. The zero value keeps nothing; set Keep and Idle
// before first use.
//
// Concurrency: safe for concurrent use.
type Pool struct {
	Keep    int           // idle buffers kept at most
	Idle    time.Duration // all idle buffers are released after this long without a Put
	Min     int           // buffers of a smaller capacity are not kept (nor released: not ours)
	Release func([]byte)  // called for a buffer let go (nil: left to the GC)

	mu    sync.Mutex
	free  [][]byte
	timer *time.Timer
}

// Get returns an idle buffer of capacity at least size, emptied, or nil when there is none.
func (p *Pool) Get(size int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.free) - 1; i >= 0; i-- {
		if b := p.free[i]; cap(b) >= size {
			p.free[i] = p.free[len(p.free)-1]
			p.free[len(p.free)-1] = nil
			p.free = p.free[:len(p.free)-1]
			return b[:0]
		}
	}
	return nil
}

// Put keeps b, which nobody uses any more, for a later Get (or releases it when Keep are idle). A
// buffer under Min is ignored.
func (p *Pool) Put(b []byte) {
	if cap(b) < p.Min {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) >= p.Keep {
		p.release(b)
		return
	}
	p.free = append(p.free, b[:0])
	if p.timer == nil {
		p.timer = time.AfterFunc(p.Idle, p.drop)
	} else {
		p.timer.Reset(p.Idle)
	}
}

func (p *Pool) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.free {
		p.release(b)
		p.free[i] = nil
	}
	p.free = p.free[:0]
}

func (p *Pool) release(b []byte) {
	if p.Release != nil {
		p.Release(b)
	}
}
