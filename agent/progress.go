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

// start sends the first message. Objects of size 0 get none (their complete frees the workers).
func (p *progress) start() {
	if p.size <= 0 {
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

// finish sends bytesSoFar = size if that was not the last message.
func (p *progress) finish() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.size > 0 && p.sent < p.size {
		p.sendLocked(p.size, time.Now())
	}
	return p.werr
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
