package agent

import (
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/protocol"
)

// progress turns a transfer's "bytes done" callbacks into protocol progress messages: the first at
// once (bytesSoFar 1, so git-lfs lets its other workers start), then at most one per interval,
// always increasing, never past the object's size, and a last one at the full size before complete.
//
// The messages are written by a goroutine of the transfer's own (run), started by start and joined
// by stop: update only notes the figure, so a transfer's goroutines (a download's ranges) never
// wait for git-lfs to read its stdout, nor for each other's writes. update is safe for concurrent
// use.
type progress struct {
	enc      *protocol.Encoder
	oid      string
	size     int64
	interval time.Duration

	mu      sync.Mutex
	pending int64 // highest done seen
	sent    int64 // bytesSoFar of the last message (owned by the writer while it runs)
	werr    error

	kick    chan struct{} // a new figure (buffered: one is enough)
	quit    chan struct{} // closed by stop
	stopped chan struct{} // closed when run returns
}

func newProgress(enc *protocol.Encoder, oid string, size int64, interval time.Duration) *progress {
	return &progress{enc: enc, oid: oid, size: size, interval: interval,
		kick: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
}

// startProgressMin: objects this big get a first message at once (bytesSoFar 1) even when they
// are not the process's first object, so the progress meter moves while they transfer.
const startProgressMin = 1 << 20

// start sends the first message for the process's first object, which frees git-lfs's other
// workers (it waits for a first progress or complete of one worker before it starts the others),
// and for objects of startProgressMin or more; a small object's progress goes with its complete.
// Objects of size 0 get none (their complete frees the workers). It then starts the writer.
func (p *progress) start(first bool) {
	var last time.Time
	if p.size > 0 && (first || p.size >= startProgressMin) {
		p.send(1)
		last = time.Now()
	}
	go p.run(last)
}

// update records that done bytes are transferred; the writer sends it when the interval allows.
func (p *progress) update(done int64) {
	done = min(done, p.size)
	p.mu.Lock()
	more := done > p.pending
	if more {
		p.pending = done
	}
	p.mu.Unlock()
	if more {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// run sends the figures update notes, at most one message per interval after last (the time of
// the previous message), until stop.
func (p *progress) run(last time.Time) {
	defer close(p.stopped)
	for {
		select {
		case <-p.kick:
		case <-p.quit:
			return
		}
		if wait := time.Until(last.Add(p.interval)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.quit:
				t.Stop()
				return
			}
		}
		p.mu.Lock()
		done := p.pending
		p.mu.Unlock()
		if done > p.sent && p.send(done) {
			last = time.Now()
		}
	}
}

// send writes a message saying soFar (the writer's, or start's before the writer runs); false
// when the write failed (the error is kept: err) or one failed before.
func (p *progress) send(soFar int64) bool {
	p.mu.Lock()
	failed := p.werr != nil
	p.mu.Unlock()
	if failed {
		return false
	}
	err := p.enc.Progress(p.oid, soFar, soFar-p.sent)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.werr = err
		return false
	}
	p.sent = soFar
	return true
}

// stop ends the writer and waits for it (a message being written is written first), so that
// nothing is written for this object after the caller's complete. Safe to call more than once.
func (p *progress) stop() {
	select {
	case <-p.quit:
	default:
		close(p.quit)
	}
	<-p.stopped
}

// finish stops the writer and returns the last message, bytesSoFar = size, when that was not sent
// yet, for the caller to send with complete (Encoder.Complete).
func (p *progress) finish() ([]protocol.Progress, error) {
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.werr != nil || p.size <= 0 || p.sent >= p.size {
		return nil, p.werr
	}
	last := protocol.Progress{Event: protocol.EventProgress, Oid: p.oid, BytesSoFar: p.size, BytesSinceLast: p.size - p.sent}
	p.sent = p.size
	return []protocol.Progress{last}, nil
}

// err stops the writer and returns the first error writing to git-lfs.
func (p *progress) err() error {
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.werr
}
