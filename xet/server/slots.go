package server

import (
	"cmp"
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// slotPool is a fixed number of slots (xorb uploads held in memory while they are checked,
// basic-transfer uploads being chunked, shard registrations being checked) shared fairly between
// users:
//
//   - A free slot goes to whoever asks while nobody waits: a lone user may take them all, and a
//     slow body goes on at the server's minimum body rate (paced.go) when nobody waits for it.
//   - A slot that frees goes to a waiter of the user holding the fewest slots (the longest waiting
//     of those), so a user at its share waits behind users below theirs.
//   - While a user waits, each other user holding more than its share (the slots divided by the
//     users holding or waiting, at least one, so at most half of them while two users compete)
//     keeps its slots beyond the share only while they are worth it: one whose body, at the rate
//     it arrived over the last seconds, would not end within Limits.SlotHold is cut (408; the
//     client retries and waits its turn), the one that would take longest first. An upload that
//     ends soon is let end; one trickling in holds no slot another user waits for. A slot taken
//     without a body to judge (a shard registration, whose body was read before it waits) is
//     never cut: it is work the server does, bounded by the store's budget (store/budget.go).
//
// A pool may also bound what one user holds (each): the shard bodies a user holds are at most
// the registrations that can run, so that its bodies waiting for a registration slot never keep
// another user's body from being read and queued for one.
//
// The waiters themselves look for slots to cut, every slotTick while they wait: the pool has no
// goroutine of its own.
type slotPool struct {
	name    string   // the pool's label in the metrics
	metrics *Metrics // nil: none; set before the server serves
	size    int
	each    int              // the most slots one user may hold (0: no bound but size)
	hold    time.Duration    // Limits.SlotHold
	now     func() time.Time // the wall clock; a test's own
	mu      sync.Mutex
	held    map[string][]*slot // by user
	n       int                // slots held
	wait    []*slotWaiter      // in arrival order
	looked  time.Time          // the last look for slots to cut: one per slotTick, however many wait
}

func newSlotPool(name string, size int, hold time.Duration) *slotPool {
	return &slotPool{name: name, size: size, hold: hold, now: time.Now, held: map[string][]*slot{}}
}

// slotTick is how often a waiter looks for slots to cut; slotJudge is the least time a slot is
// held before its rate is judged, slotWindow the span its rate is measured over.
const (
	slotTick   = 250 * time.Millisecond
	slotJudge  = time.Second
	slotWindow = 2 * time.Second
)

// progress is what the pool sees of a slot's request body: the bytes read so far, and a way to
// end it (pacedBody).
type progress interface {
	received() int64
	cut()
}

// slot is one held upload slot. Its samples are touched only under the pool's lock.
type slot struct {
	pool  *slotPool
	user  string
	body  progress // nil: never judged
	size  int64    // the body's length (its limit when unknown)
	cut   bool     // cut, not yet released
	old   sample   // the rate is (now - old): old is between slotWindow and twice that ago
	mid   sample
	freed bool
}

type sample struct {
	at  time.Time
	got int64
}

type slotWaiter struct {
	user  string
	body  progress
	size  int64
	ready chan *slot // buffered: the releaser hands over without waiting
}

// acquire waits for a slot for user (see slotPool), whose request body is body (nil: none the pool
// may judge) of size bytes. It fails only when ctx ends first.
func (p *slotPool) acquire(ctx context.Context, user string, body progress, size int64) (*slot, error) {
	sl := &slot{pool: p, user: user, body: body, size: size}
	p.mu.Lock()
	start := p.now()
	if p.n < p.size && p.mayHold(user) {
		p.grant(sl)
		p.mu.Unlock()
		p.metrics.slotWaited(p.name, 0)
		return sl, nil
	}
	w := &slotWaiter{user: user, body: body, size: size, ready: make(chan *slot, 1)}
	p.wait = append(p.wait, w)
	p.mu.Unlock()
	tick := time.NewTicker(slotTick)
	defer tick.Stop()
	defer func() { p.metrics.slotWaited(p.name, p.now().Sub(start)) }()
	for {
		p.preempt()
		select {
		case got := <-w.ready:
			return got, nil
		case <-ctx.Done():
			p.mu.Lock()
			if i := slices.Index(p.wait, w); i >= 0 {
				p.wait = slices.Delete(p.wait, i, i+1)
				p.mu.Unlock()
				return nil, ctx.Err()
			}
			p.mu.Unlock()
			(<-w.ready).release() // handed over meanwhile: pass it on
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// grant records sl as held from now. Under p.mu.
func (p *slotPool) grant(sl *slot) {
	now := p.now()
	sl.old, sl.mid = sample{at: now}, sample{at: now}
	p.held[sl.user] = append(p.held[sl.user], sl)
	p.n++
}

// release gives the slot back: to the waiter of the user holding the fewest slots, else to the
// pool. Safe to call more than once.
func (sl *slot) release() {
	p := sl.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if sl.freed {
		return
	}
	sl.freed = true
	mine := p.held[sl.user]
	mine = slices.DeleteFunc(mine, func(o *slot) bool { return o == sl })
	if len(mine) == 0 {
		delete(p.held, sl.user)
	} else {
		p.held[sl.user] = mine
	}
	p.n--
	if len(p.wait) == 0 {
		return
	}
	best := -1
	for i, w := range p.wait {
		if p.mayHold(w.user) && (best < 0 || len(p.held[w.user]) < len(p.held[p.wait[best].user])) {
			best = i
		}
	}
	if best < 0 {
		return // every waiter's user holds its most: the slot waits for the next to ask or free
	}
	w := p.wait[best]
	p.wait = slices.Delete(p.wait, best, best+1)
	next := &slot{pool: p, user: w.user, body: w.body, size: w.size}
	p.grant(next)
	w.ready <- next
}

// mayHold reports whether user may take one more slot (each). Under p.mu.
func (p *slotPool) mayHold(user string) bool {
	return p.each <= 0 || len(p.held[user]) < p.each
}

// waiting is the number of requests waiting for a slot.
func (p *slotPool) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.wait)
}

// inUse is the number of slots held.
func (p *slotPool) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// preempt cuts the slots that users beyond their share hold while another user waits and that
// would not end within p.hold (see slotPool). It looks at most once per slotTick, whichever
// waiter calls it: a thousand waiters cost what one does.
func (p *slotPool) preempt() {
	p.mu.Lock()
	now := p.now()
	if now.Sub(p.looked) < slotTick {
		p.mu.Unlock()
		return
	}
	p.looked = now
	cut := p.toCut(now)
	p.mu.Unlock()
	for _, sl := range cut {
		sl.body.cut()
		p.metrics.slotCut(p.name)
	}
}

// toCut picks the slots to cut at now and marks them. Under p.mu.
func (p *slotPool) toCut(now time.Time) []*slot {
	if len(p.wait) == 0 {
		return nil
	}
	users := map[string]bool{}
	for u := range p.held {
		users[u] = true
	}
	waiting := map[string]bool{}
	for _, w := range p.wait {
		users[w.user], waiting[w.user] = true, true
	}
	share := max(1, p.size/len(users))
	var out []*slot
	for u, mine := range p.held {
		if len(waiting) == 1 && waiting[u] {
			continue // only its own requests wait
		}
		keep := len(mine)
		type cand struct {
			sl   *slot
			left time.Duration
		}
		var cands []cand
		for _, sl := range mine {
			if sl.cut {
				keep--
				continue
			}
			if left, judged := sl.timeLeft(now); judged && left > p.hold {
				cands = append(cands, cand{sl, left})
			}
		}
		slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(b.left, a.left) })
		for _, c := range cands {
			if keep <= share {
				break
			}
			c.sl.cut = true
			keep--
			out = append(out, c.sl)
		}
	}
	return out
}

// timeLeft is how long the slot's body would still take at the rate it arrives (judged false
// when the slot is too young to tell, or has no body to judge). It moves the rate's samples on.
// Under p.mu.
func (sl *slot) timeLeft(now time.Time) (time.Duration, bool) {
	if sl.body == nil || now.Sub(sl.old.at) < slotJudge {
		return 0, false
	}
	got := sl.body.received()
	if now.Sub(sl.mid.at) >= slotWindow {
		sl.old, sl.mid = sl.mid, sample{now, got}
	}
	left := sl.size - got
	if left <= 0 {
		return 0, true // all there: the handler is finishing
	}
	rate := float64(got-sl.old.got) / now.Sub(sl.old.at).Seconds()
	if rate <= 0 {
		return time.Duration(1<<63 - 1), true
	}
	return time.Duration(float64(left) / rate * float64(time.Second)), true
}

// uploader names the user a slot is counted for: the token's or the LFS request's user;
// without one (open mode, a client certificate alone) the client certificate's subject, else the
// repository, else the client's address.
func uploader(r *http.Request, subject, ns string) string {
	switch {
	case subject != "":
		return "user:" + subject
	case r.TLS != nil && len(r.TLS.PeerCertificates) > 0:
		return "cert:" + r.TLS.PeerCertificates[0].Subject.String()
	case ns != "":
		return "repo:" + ns
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}
