package server

import (
	"context"
	"fmt"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"io"
	"net/http"

	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeBody is a slot's body whose bytes a test sets.
type fakeBody struct {
	got   atomic.Int64
	isCut atomic.Bool
}

func (b *fakeBody) received() int64 { return b.got.Load() }
func (b *fakeBody) cut()            { b.isCut.Store(true) }

// testPool is a pool of size slots on a clock the test moves.
func testPool(size int) (*slotPool, *clock) {
	c := newClock()
	p := newSlotPool("test", size, 10*time.Second)
	p.now = c.Now
	return p, c
}

// hold takes n slots for user, each a body of size bytes.
func hold(t *testing.T, p *slotPool, user string, n int, size int64) ([]*slot, []*fakeBody) {
	t.Helper()
	var sls []*slot
	var bodies []*fakeBody
	for range n {
		b := &fakeBody{}
		sl, err := p.acquire(t.Context(), user, b, size)
		if err != nil {
			t.Fatal(err)
		}
		sls, bodies = append(sls, sl), append(bodies, b)
	}
	return sls, bodies
}

// queue queues a waiter for user (as acquire does) without running acquire's loop, so the test
// drives toCut itself.
func queue(p *slotPool, user string) *slotWaiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &slotWaiter{user: user, ready: make(chan *slot, 1)}
	p.wait = append(p.wait, w)
	return w
}

func cutCount(bodies []*fakeBody) int {
	n := 0
	for _, b := range bodies {
		if b.isCut.Load() {
			n++
		}
	}
	return n
}

// trickle moves the clock on by d with every body receiving rate bytes per second.
func trickle(c *clock, d time.Duration, rate int64, bodies ...[]*fakeBody) {
	c.Advance(d)
	for _, bs := range bodies {
		for _, b := range bs {
			b.got.Add(int64(float64(rate) * d.Seconds()))
		}
	}
}

// Issue 41, item 3: eight slow uploads of one user hold every slot; another user waits. The pool
// cuts four of them (she keeps half) and gives a freed slot to the waiter, not to her.
func TestSlotsCutSlowUserBeyondHalf(t *testing.T) {
	p, c := testPool(8)
	alice, bodies := hold(t, p, "alice", 8, 64<<20)
	trickle(c, 3*time.Second, 17000, bodies)
	if got := p.toCut(c.Now()); len(got) != 0 {
		t.Fatalf("%d slots cut with nobody waiting", len(got))
	}
	w := queue(p, "bob")
	queue(p, "alice") // her own ninth upload waits too: it takes nothing from bob
	for _, sl := range p.toCut(c.Now()) {
		sl.body.cut()
	}
	if n := cutCount(bodies); n != 4 {
		t.Fatalf("%d of alice's 8 slow slots cut while bob waits, want 4 (she keeps half)", n)
	}
	if again := p.toCut(c.Now()); len(again) != 0 {
		t.Fatalf("%d more cut on the next look: a cut slot counts as going", len(again))
	}
	for i, sl := range alice {
		if bodies[i].isCut.Load() {
			sl.release()
			break
		}
	}
	select {
	case sl := <-w.ready:
		if sl.user != "bob" {
			t.Fatalf("the freed slot went to %s", sl.user)
		}
	default:
		t.Fatal("the freed slot did not go to bob, who waited with none")
	}
}

// Nobody waits: a slow body keeps its slot (it meets the minimum body rate, paced.go's business).
// A user whose own uploads wait is not cut for them either.
func TestSlotsLoneSlowUserKeepsSlots(t *testing.T) {
	p, c := testPool(4)
	_, bodies := hold(t, p, "thin", 4, 64<<20)
	trickle(c, 10*time.Second, 20000, bodies)
	queue(p, "thin")
	for _, sl := range p.toCut(c.Now()) {
		sl.body.cut()
	}
	if n := cutCount(bodies); n != 0 {
		t.Fatalf("%d slots cut for the user's own waiting upload", n)
	}
}

// Beyond its share, a body that ends within SlotHold at its rate is let end; a slow one is cut,
// the one that would take longest first; a body younger than slotJudge is not judged yet.
func TestSlotsJudgeByTimeLeft(t *testing.T) {
	p, c := testPool(4)
	_, fast := hold(t, p, "alice", 1, 20<<20) // 2 MiB/s: ends within 10 s
	_, slow := hold(t, p, "alice", 3, 64<<20) // about 1 MiB/s: a minute left
	trickle(c, 3*time.Second, 2<<20, fast)
	for i, b := range slow {
		b.got.Add(int64(3-i) << 20) // slow[2] is the slowest
	}
	queue(p, "bob")
	for _, sl := range p.toCut(c.Now()) {
		sl.body.cut()
	}
	if cutCount(fast) != 0 || slow[0].isCut.Load() || !slow[1].isCut.Load() || !slow[2].isCut.Load() {
		t.Fatalf("cut: fast %d, slow %v %v %v; want the two slowest (share 2 of 4, the fast one ends soon)",
			cutCount(fast), slow[0].isCut.Load(), slow[1].isCut.Load(), slow[2].isCut.Load())
	}

	p2, c2 := testPool(2)
	_, young := hold(t, p2, "alice", 2, 64<<20)
	c2.Advance(slotJudge / 2)
	queue(p2, "bob")
	if got := p2.toCut(c2.Now()); len(got) != 0 || cutCount(young) != 0 {
		t.Fatalf("%d slots cut before they could be judged", len(got))
	}
}

// Three users: the share is a third. Two who each hold half with slow bodies are both cut down
// to it while the third waits.
func TestSlotsShareAmongThree(t *testing.T) {
	p, c := testPool(8)
	_, a := hold(t, p, "alice", 4, 64<<20)
	_, m := hold(t, p, "mallory", 4, 64<<20)
	trickle(c, 3*time.Second, 17000, a, m)
	queue(p, "bob")
	for _, sl := range p.toCut(c.Now()) {
		sl.body.cut()
	}
	if cutCount(a) != 2 || cutCount(m) != 2 {
		t.Fatalf("cut %d of alice's and %d of mallory's slots, want 2 each (share 8/3 → 2)", cutCount(a), cutCount(m))
	}
}

// A freed slot goes to the waiting user who holds the fewest, and a waiter whose context ends
// leaves the queue (or passes on a slot handed to it meanwhile): no slot is lost.
func TestSlotsGrantOrderAndCancel(t *testing.T) {
	p, _ := testPool(2)
	sls, _ := hold(t, p, "alice", 2, 1)
	got := make(chan string, 3)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := func(ctx context.Context, user string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sl, err := p.acquire(ctx, user, nil, 1)
			if err != nil {
				got <- user + ": " + err.Error()
				return
			}
			got <- user
			sl.release()
		}()
		if !testutil.Eventually(10*time.Second, func() bool { return waiting(p, user) }) {
			t.Fatalf("%s never waited for a slot", user)
		}
	}
	start(t.Context(), "alice")
	start(ctx, "carol")
	cancel()
	if g := <-got; g != "carol: context canceled" {
		t.Fatalf("canceled waiter: %q", g)
	}
	start(t.Context(), "bob")
	sls[0].release()
	if g := <-got; g != "bob" {
		t.Fatalf("the first freed slot went to %q, want bob (holding none, alice holds one)", g)
	}
	sls[1].release()
	wg.Wait()
	if g := <-got; g != "alice" {
		t.Fatalf("then %q", g)
	}
	if n := p.inUse(); n != 0 {
		t.Fatalf("%d slots held after everyone released", n)
	}
}

func waiting(p *slotPool, user string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.wait {
		if w.user == user {
			return true
		}
	}
	return false
}

// slowUpload posts a xorb body of x's records at rate bytes per second, announced at size bytes,
// until the server answers; it returns the answer's status (0: the connection failed) on the
// channel, and stops sending when the test ends.
func slowUpload(t *testing.T, e *env, tok string, body []byte, h string, size int64, rate int) <-chan int {
	t.Helper()
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the writer: ends when the test stops it or the transport stops reading
		defer wg.Done()
		step := max(1, rate/20)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for off := 0; off < int(size); off += step {
			select {
			case <-stop:
				pw.CloseWithError(fmt.Errorf("test ended"))
				return
			case <-tick.C:
			}
			if _, err := pw.Write(body[off%len(body) : min(off%len(body)+step, len(body))]); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, err := http.NewRequest("POST", e.base+"/v1/xorbs/default/"+h, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set("Authorization", "Bearer "+tok)
	status := make(chan int, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		res.Body.Close()
		status <- res.StatusCode
	}()
	t.Cleanup(func() { close(stop); pr.CloseWithError(fmt.Errorf("test ended")); wg.Wait() })
	return status
}

// Issue 41, item 3 over HTTP: Alice holds all eight xorb slots with bodies trickling at 17 KB/s;
// Bob's upload is stored within seconds, four of hers are answered 408 and the other four go on.
func TestSlowUserYieldsSlotsOverHTTP(t *testing.T) {
	e := newEnv(t, nil)
	x := randomXorb(t, 1<<20, 41)
	alice := e.token("alice", "alice/r", scopeWrite, time.Hour)
	var answers []<-chan int
	for range 8 {
		answers = append(answers, slowUpload(t, e, alice, x.Body, x.Hash.String(), 64<<20, 17000))
	}
	if !testutil.Eventually(10*time.Second, func() bool { return e.srv.xorbs.inUse() == 8 }) {
		t.Fatalf("alice's uploads hold %d slots, want 8", e.srv.xorbs.inUse())
	}
	bx := randomXorb(t, 256<<10, 42)
	start := time.Now()
	res := e.do("POST", "/v1/xorbs/default/"+bx.Hash.String(), bx.Body, "Authorization", "Bearer "+e.token("bob", "bob/r", scopeWrite, time.Hour))
	if res.status != http.StatusOK {
		t.Fatalf("bob's upload: %v", res)
	}
	t.Logf("bob's upload took %v beside alice's eight", time.Since(start))
	cut := 0
	count := func() bool {
		for _, a := range answers {
			select {
			case st := <-a:
				cut++
				if st != http.StatusRequestTimeout {
					t.Errorf("one of alice's uploads was answered %d, want 408", st)
				}
			default:
			}
		}
		return cut >= 4
	}
	if !testutil.Eventually(10*time.Second, count) || cut != 4 {
		t.Fatalf("%d of alice's 8 uploads cut, want 4 (she keeps half while bob waits)", cut)
	}
	if n := e.srv.xorbs.inUse(); n != 4 {
		t.Fatalf("%d slots held after bob's upload, want alice's other 4", n)
	}
}

// A user on a thin link (2 Mbit/s over eight uploads, 31 KB/s each) with nobody else waiting is
// not cut: every upload is stored.
func TestThinLinkUploadsNotCut(t *testing.T) {
	e := newEnv(t, nil)
	tok := e.token("thin", "thin/r", scopeWrite, time.Hour)
	var answers []<-chan int
	for i := range 8 {
		x := randomXorb(t, 64<<10, uint64(50+i))
		answers = append(answers, slowUpload(t, e, tok, x.Body, x.Hash.String(), int64(len(x.Body)), 2e6/8/8))
	}
	for i, a := range answers {
		if st := <-a; st != http.StatusOK {
			t.Fatalf("upload %d over the thin link: %d", i, st)
		}
	}
}

// However many requests wait, the pool looks for slots to cut once per slotTick: waiters that
// pile up cost one look, not one each.
func TestSlotsLookOncePerTick(t *testing.T) {
	p, c := testPool(4)
	_, bodies := hold(t, p, "alice", 4, 64<<20)
	trickle(c, 3*time.Second, 17000, bodies)
	for range 100 {
		queue(p, "bob")
	}
	for range 100 {
		p.preempt()
	}
	if n := cutCount(bodies); n != 2 {
		t.Fatalf("%d cut after the first look, want 2", n)
	}
	for _, b := range bodies {
		b.isCut.Store(false) // as if alice's next uploads took their place
	}
	p.mu.Lock()
	for _, sl := range p.held["alice"] {
		sl.cut = false
	}
	p.mu.Unlock()
	p.preempt()
	if n := cutCount(bodies); n != 0 {
		t.Fatalf("a second look within the same tick cut %d", n)
	}
	trickle(c, slotTick, 17000, bodies)
	p.preempt()
	if n := cutCount(bodies); n != 2 {
		t.Fatalf("the look a tick later cut %d, want 2", n)
	}
}
