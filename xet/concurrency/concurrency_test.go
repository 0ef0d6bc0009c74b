package concurrency

import (
	"context"
	"sync"
	"testing"
	"time"
)

// link is a scripted link, simulated in virtual time (steps of dt): every request waits its
// latency, then moves its bytes at its share of the bandwidth (each request at most perReq bytes/s,
// all of them together at most total). The script may make the server answer 503 and may change
// the latency, both by time and by the requests in flight.
type link struct {
	perReq, total float64 // bytes per second
	size          int64   // bytes per request
	latency       func(now time.Duration, active int) time.Duration
	throttle      func(now time.Duration, active int) bool // answer 503 (after the latency) instead
}

type simReq struct {
	ttfb      time.Duration // when its first byte arrives
	left      float64
	lat       time.Duration
	throttled bool
}

// sim drives c through l for d of virtual time with unbounded demand and calls at(now) every
// virtual millisecond. It returns the bytes moved.
func (l link) sim(c *Controller, clock *fakeClock, d time.Duration, at func(now time.Duration)) float64 {
	const dt = time.Millisecond
	var reqs []*simReq
	var moved float64
	for now := time.Duration(0); now < d; now += dt {
		clock.set(now)
		for c.TryAcquire() {
			r := &simReq{left: float64(l.size)}
			r.lat = l.latency(now, len(reqs)+1)
			r.ttfb = now + r.lat
			if l.throttle != nil {
				r.throttled = l.throttle(now, len(reqs)+1)
			}
			reqs = append(reqs, r)
		}
		flowing := 0
		for _, r := range reqs {
			if now >= r.ttfb && !r.throttled {
				flowing++
			}
		}
		share := l.perReq
		if flowing > 0 {
			share = min(l.perReq, l.total/float64(flowing))
		}
		keep := reqs[:0]
		for _, r := range reqs {
			switch {
			case now < r.ttfb:
			case r.throttled:
				c.Observe(Sample{Latency: r.lat, Throttled: true})
				c.Release()
				continue
			default:
				n := min(r.left, share*dt.Seconds())
				r.left -= n
				moved += n
				if r.left <= 0 {
					c.Observe(Sample{Bytes: l.size, Latency: r.lat})
					c.Release()
					continue
				}
			}
			keep = append(keep, r)
		}
		reqs = keep
		if at != nil {
			at(now)
		}
	}
	return moved
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_000_000, 0)} }

func (f *fakeClock) set(d time.Duration) {
	f.mu.Lock()
	f.t = time.Unix(1_000_000, 0).Add(d)
	f.mu.Unlock()
}

func (f *fakeClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func constLatency(d time.Duration) func(time.Duration, int) time.Duration {
	return func(time.Duration, int) time.Duration { return d }
}

const mb = 1 << 20

// A link with room for far more than the ceiling: the limit climbs from Start to Max, one step
// per window, and stays there.
func TestGrowsWhileThroughputRises(t *testing.T) {
	clock := newFakeClock()
	c := New(Config{Start: 4, Max: 24, Now: clock.now})
	l := link{perReq: 1 * mb, total: 1000 * mb, size: mb / 4, latency: constLatency(20 * time.Millisecond)}
	var seen []int
	l.sim(c, clock, 40*time.Second, func(time.Duration) {
		if n := c.Limit(); len(seen) == 0 || seen[len(seen)-1] != n {
			seen = append(seen, n)
		}
	})
	if c.Limit() != 24 {
		t.Fatalf("limit %d after 40 s of a link with room for 1000 requests, want the ceiling 24 (steps %v)", c.Limit(), seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] != seen[i-1]+1 {
			t.Fatalf("limit went %v: want one step up at a time, never down, on a link that never pushes back", seen)
		}
	}
	if st := c.Stats(); st.Throttled+st.Failed+st.Slow != 0 {
		t.Fatalf("cuts on a clean link: %+v", st)
	}
}

// A link that carries 10 requests' worth: the limit stops growing there (it probes one above and
// steps back) and the link is kept full.
func TestStopsAtTheLinksLimit(t *testing.T) {
	clock := newFakeClock()
	c := New(Config{Start: 4, Max: 64, Now: clock.now})
	l := link{perReq: 1 * mb, total: 10 * mb, size: mb / 4, latency: constLatency(20 * time.Millisecond)}
	var late []int
	moved := l.sim(c, clock, 60*time.Second, func(now time.Duration) {
		if now >= 30*time.Second {
			late = append(late, c.Limit())
		}
	})
	st := c.Stats()
	if st.Peak > 12 {
		t.Fatalf("limit peaked at %d on a link that carries 10 requests' worth (stats %+v)", st.Peak, st)
	}
	for _, n := range late {
		if n < 9 {
			t.Fatalf("limit fell to %d in the second half on a clean link that carries 10 (stats %+v)", n, st)
		}
	}
	if full := 10.0 * mb * 60; moved < 0.8*full {
		t.Fatalf("moved %.0f MB in 60 s, want at least 80%% of the link's %.0f MB", moved/mb, full/mb)
	}
}

// 503s from a server that takes 3 requests at once: the limit, grown high before, is halved
// down to about 3 and stays near it.
func TestShrinksOn503(t *testing.T) {
	clock := newFakeClock()
	c := New(Config{Start: 4, Max: 32, Now: clock.now})
	busy := 20 * time.Second
	l := link{perReq: 1 * mb, total: 1000 * mb, size: mb / 4, latency: constLatency(10 * time.Millisecond),
		throttle: func(now time.Duration, active int) bool { return now >= busy && active > 3 }}
	before, after := 0, 0
	l.sim(c, clock, 40*time.Second, func(now time.Duration) {
		switch {
		case now == busy-time.Millisecond:
			before = c.Limit()
		case now >= busy+5*time.Second:
			after = max(after, c.Limit())
		}
	})
	if before < 16 {
		t.Fatalf("limit %d before the 503s, want the clean link to have grown it to 16 or more", before)
	}
	if after > 6 {
		t.Fatalf("limit up to %d in the 503 phase against a server taking 3 at once (from %d), want at most 6 (stats %+v)", after, before, c.Stats())
	}
	if c.Stats().Throttled == 0 {
		t.Fatal("no cut counted for throttling")
	}
}

// The round trip rises fivefold (queues filling on the path) while the bandwidth per request
// stays: the limit shrinks well below what it had.
func TestShrinksOnLatencyRise(t *testing.T) {
	clock := newFakeClock()
	c := New(Config{Start: 4, Max: 16, Now: clock.now})
	rise := 20 * time.Second
	l := link{perReq: 1 * mb, total: 1000 * mb, size: mb / 4, latency: func(now time.Duration, _ int) time.Duration {
		if now >= rise {
			return 100 * time.Millisecond
		}
		return 20 * time.Millisecond
	}}
	before, low := 0, 1<<30
	l.sim(c, clock, 30*time.Second, func(now time.Duration) {
		switch {
		case now == rise-time.Millisecond:
			before = c.Limit()
		case now >= rise:
			low = min(low, c.Limit())
		}
	})
	if before != 16 {
		t.Fatalf("limit %d before the rise, want the ceiling 16", before)
	}
	if low > 8 {
		t.Fatalf("limit stayed at %d or more after the latency rose fivefold (from %d), want it halved at least (stats %+v)", low, before, c.Stats())
	}
	if c.Stats().Slow == 0 {
		t.Fatal("no cut counted for latency")
	}
}

// Demand below the limit (a transfer of few requests) never grows it.
func TestNoGrowthWithoutDemand(t *testing.T) {
	clock := newFakeClock()
	c := New(Config{Start: 4, Max: 32, Now: clock.now})
	for i := range 1000 {
		clock.set(time.Duration(i) * 10 * time.Millisecond)
		for range 3 {
			if !c.TryAcquire() {
				t.Fatal("no room for 3 under a limit of 4")
			}
		}
		for range 3 {
			c.Observe(Sample{Bytes: mb, Latency: time.Millisecond})
			c.Release()
		}
	}
	if c.Limit() != 4 {
		t.Fatalf("limit %d after 3000 requests never asking for more than 3 at once, want 4", c.Limit())
	}
}

// Fixed never moves; Acquire waits for room and gives up with its context.
func TestFixedAndAcquire(t *testing.T) {
	c := Fixed(2)
	for range 50 {
		c.Observe(Sample{Throttled: true})
	}
	if c.Limit() != 2 {
		t.Fatalf("fixed limit moved to %d", c.Limit())
	}
	ctx := context.Background()
	if err := c.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := c.Acquire(short); err == nil {
		t.Fatal("a third request admitted under a limit of 2")
	}
	got := make(chan error, 1)
	go func() { got <- c.Acquire(ctx) }()
	c.Release()
	if err := <-got; err != nil {
		t.Fatalf("Acquire after a Release: %v", err)
	}
}

// Config is brought within its bounds.
func TestConfigBounds(t *testing.T) {
	for _, tc := range []struct {
		cfg       Config
		start, mx int
	}{
		{Config{}, DefaultStart, DefaultStart},
		{Config{Start: 8, Max: 3}, 3, 3},
		{Config{Start: 1, Min: 2, Max: 10}, 2, 10},
		{Config{Max: 2, Min: 5}, 5, 5},
	} {
		c := New(tc.cfg)
		if c.Limit() != tc.start || c.Max() != tc.mx {
			t.Errorf("New(%+v): limit %d max %d, want %d %d", tc.cfg, c.Limit(), c.Max(), tc.start, tc.mx)
		}
	}
}

// A report carried by a context reaches the controller: a throttled attempt a client retried
// itself cuts the limit like a sample would.
func TestReportThroughContext(t *testing.T) {
	c := New(Config{Start: 8, Max: 8})
	Report(context.Background(), true) // no report carried: nothing happens
	ctx := WithReport(context.Background(), c.Observe)
	Report(ctx, true)
	if st := c.Stats(); c.Limit() != 4 || st.Throttled != 1 {
		t.Fatalf("after one throttled attempt reported: limit %d, stats %+v; want 4 and one throttling cut", c.Limit(), st)
	}
	Report(ctx, false) // the load the cut answered: not cut again
	if c.Limit() != 4 {
		t.Fatalf("a failure of the load already answered cut the limit again, to %d", c.Limit())
	}
}

// Latencies that jitter between 0.2 and 3 ms (a loopback server) never count as a rise: the
// limit still climbs on a link with room.
func TestLoopbackJitterIsNoLatencyRise(t *testing.T) {
	clock := newFakeClock()
	c := New(Config{Start: 4, Max: 16, Now: clock.now})
	n := 0
	l := link{perReq: 1 * mb, total: 1000 * mb, size: mb / 4, latency: func(time.Duration, int) time.Duration {
		n++
		return []time.Duration{200 * time.Microsecond, 3 * time.Millisecond, time.Millisecond}[n%3]
	}}
	l.sim(c, clock, 20*time.Second, nil)
	if st := c.Stats(); st.Slow != 0 || c.Limit() != 16 {
		t.Fatalf("limit %d, stats %+v: want no latency cut and the ceiling 16 under sub-millisecond jitter", c.Limit(), st)
	}
}
