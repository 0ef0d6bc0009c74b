package agent

import (
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/protocol"
)

// progress turns a transfer's "bytes done" callbacks into protocol progress messages: the first at
// once (bytesSoFar 1, so git-lfs lets its other workers start), then at most one per interval,
// always increasing, never past the object's size, and a last one at the full size before complete.
// update is safe for concurrent use.
type progress struct {
	enc      *protocol.Encoder
	oid      string
	size     int64
	interval time.Duration

	mu       sync.Mutex
	sent     int64 // bytesSoFar of the last message
	pending  int64 // highest done seen, not yet sent
	lastSent time.Time
	werr     error
}

func newProgress(enc *protocol.Encoder, oid string, size int64, interval time.Duration) *progress {
	return &progress{enc: enc, oid: oid, size: size, interval: interval}
}

// startProgressMin: objects this big get a first message at once (bytesSoFar 1) even when they
// are not the process's first object, so the progress meter moves while they transfer.
const startProgressMin = 1 << 20

// start sends the first message for the process's first object, which frees git-lfs's other
// workers (it waits for a first progress or complete of one worker before it starts the others),
// and for objects of startProgressMin or more; a small object's progress goes with its complete.
// Objects of size 0 get none (their complete frees the workers).
func (p *progress) start(first bool) {
	if p.size <= 0 || !first && p.size < startProgressMin {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sendLocked(1, time.Now())
}

// update records that done bytes are transferred.
func (p *progress) update(done int64) {
	if done > p.size {
		done = p.size
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if done <= p.sent {
		return
	}
	p.pending = done
	now := time.Now()
	if now.Sub(p.lastSent) >= p.interval {
		p.sendLocked(done, now)
	}
}

// finish returns the last message, bytesSoFar = size, when that was not sent yet, for the caller to
// send with complete (Encoder.Complete); later updates send nothing.
func (p *progress) finish() ([]protocol.Progress, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.werr != nil || p.size <= 0 || p.sent >= p.size {
		return nil, p.werr
	}
	last := protocol.Progress{Event: protocol.EventProgress, Oid: p.oid, BytesSoFar: p.size, BytesSinceLast: p.size - p.sent}
	p.sent = p.size
	return []protocol.Progress{last}, nil
}

// err returns the first error writing to git-lfs.
func (p *progress) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.werr
}

func (p *progress) sendLocked(soFar int64, now time.Time) {
	if p.werr != nil {
		return
	}
	if err := p.enc.Progress(p.oid, soFar, soFar-p.sent); err != nil {
		p.werr = err
		return
	}
	p.sent = soFar
	p.lastSent = now
}
