// Package concurrency holds the one policy of how many requests a transfer keeps in flight over a
// link: Controller, used by downloads (xorb range fetches, xet/download) and uploads (xorb
// uploads, xet/upload) alike.
//
// The limit starts modest and moves by what the requests it admits report:
//
//   - It grows by one while the measured throughput keeps rising with it: a window at limit L+1
//     must move at least half the extra bytes one more request of the window at L would add
//     (base·(1 + ½/L)). When it does not, the link (or the server) is the bottleneck: the limit
//     steps back to L and holds there for HoldWindows windows, then probes L+1 again, so it
//     follows a link that became faster.
//   - It is halved on a failed request: a throttling answer (429, 503) or another retryable
//     failure (a reset, a body cut short, a 5xx). At most once per window: the requests already
//     in flight when it was cut belong to the old load, and their failures do not cut it again.
//   - It shrinks by a quarter when the window's median latency (the time to the answer's first
//     byte) rises above LatencyFactor times its floor, the least latency of the last FloorWindows
//     windows, and at least LatencySlack above it: queues are filling somewhere on the path. (The
//     slack keeps the jitter of sub-millisecond round trips, on loopback, from counting.)
//   - It stays within [Min, Max]; Max is the configured ceiling.
//
// A window is two rounds of L completions: the first lets the requests started under the old
// limit drain (their figures are ignored), the second measures — its bytes over the time it
// took, and its latencies. A window grows the limit only when demand exceeded it (someone waited
// for room): a transfer with fewer requests than the limit teaches nothing about the link.
//
// Decisions count completions and compare figures; they never wait on a timer, so a test drives a
// Controller with a fake clock (Config.Now) through a scripted link.
package concurrency

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultStart         = 4
	DefaultLatencyFactor = 2.0
	DefaultLatencySlack  = 10 * time.Millisecond
	DefaultHoldWindows   = 4
	DefaultFloorWindows  = 8
)

// Config configures a Controller. Zero fields take the defaults.
type Config struct {
	// Start is the first limit (default DefaultStart), Min the least (default 1) and Max the most
	// (default Start). Start is brought within [Min, Max].
	Start, Min, Max int
	// LatencyFactor: a window whose median latency is above LatencyFactor times the floor shrinks
	// the limit; default 2.
	LatencyFactor float64
	// LatencySlack: a rise of less than this above the floor never counts; default 10 ms.
	LatencySlack time.Duration
	// HoldWindows is how many windows the limit holds after a probe found no more throughput;
	// default 4.
	HoldWindows int
	// FloorWindows is how many windows the latency floor remembers (a path whose round trip grew
	// for good sets a new floor after that many); default 8.
	FloorWindows int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Start <= 0 {
		c.Start = DefaultStart
	}
	if c.Min <= 0 {
		c.Min = 1
	}
	if c.Max <= 0 {
		c.Max = c.Start
	}
	c.Max = max(c.Max, c.Min)
	c.Start = min(max(c.Start, c.Min), c.Max)
	if c.LatencyFactor <= 1 {
		c.LatencyFactor = DefaultLatencyFactor
	}
	if c.LatencySlack <= 0 {
		c.LatencySlack = DefaultLatencySlack
	}
	if c.HoldWindows <= 0 {
		c.HoldWindows = DefaultHoldWindows
	}
	if c.FloorWindows <= 0 {
		c.FloorWindows = DefaultFloorWindows
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Sample is what one request reports when it ends.
type Sample struct {
	Bytes int64 // bytes it moved (sent or received), a failed one's included
	// Latency is the time to the first byte of its answer; 0 when unknown (it then counts for
	// throughput only).
	Latency time.Duration
	// Throttled: the server said 429 or 503. Failed: another failure worth a retry (a reset, a
	// body cut short, a 5xx). A failure that says nothing of the link (a 404, bad data) is not
	// reported.
	Throttled, Failed bool
}

// Controller admits requests up to its limit and moves the limit by their samples (see the
// package documentation). Safe for concurrent use.
type Controller struct {
	cfg Config

	mu       sync.Mutex
	limit    int
	inflight int
	wake     chan struct{} // closed (and replaced) when room may have opened
	win      window
	base     float64 // throughput (bytes/s) of the last window that grew the limit; 0: none yet
	baseAt   int     // the limit base was measured at
	hold     int     // windows left before the next probe
	floors   []time.Duration
	stats    Stats
}

// window is the state of the current window (see the package documentation).
type window struct {
	done      int // completions since the window began
	cut       bool
	measuring bool
	from      time.Time // when the measured round began
	bytes     int64
	lat       []time.Duration
	waited    bool // someone waited for room while measuring
}

// Stats counts a Controller's decisions.
type Stats struct {
	Low, Peak                      int // the lowest and the highest limit reached
	Grown, Throttled, Failed, Slow int // limit raised; cut on throttling, on failures, on latency
}

// New returns a Controller.
func New(cfg Config) *Controller {
	cfg = cfg.withDefaults()
	c := &Controller{cfg: cfg, limit: cfg.Start, wake: make(chan struct{})}
	c.stats.Low, c.stats.Peak = c.limit, c.limit
	return c
}

// Fixed returns a Controller whose limit is n (at least 1) for good.
func Fixed(n int) *Controller {
	n = max(n, 1)
	return New(Config{Start: n, Min: n, Max: n})
}

// Limit is the current limit.
func (c *Controller) Limit() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit
}

// Max is the configured ceiling.
func (c *Controller) Max() int { return c.cfg.Max }

// Stats returns the decisions so far.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// TryAcquire takes room for one request when there is some. A false answer counts as demand
// above the limit.
func (c *Controller) TryAcquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight < c.limit {
		c.inflight++
		return true
	}
	if c.win.measuring {
		c.win.waited = true
	}
	return false
}

// Acquire waits for room for one request, or for ctx to end (its error). The caller calls Release
// when the request is over.
func (c *Controller) Acquire(ctx context.Context) error {
	for {
		if c.TryAcquire() {
			return nil
		}
		c.mu.Lock()
		ch := c.wake
		ok := c.inflight < c.limit // room opened since TryAcquire
		c.mu.Unlock()
		if ok {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release gives back the room of one request.
func (c *Controller) Release() {
	c.mu.Lock()
	c.inflight--
	c.wakeLocked()
	c.mu.Unlock()
}

func (c *Controller) wakeLocked() {
	close(c.wake)
	c.wake = make(chan struct{})
}

// Observe records the end of one request.
func (c *Controller) Observe(s Sample) {
	if c.cfg.Min == c.cfg.Max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	w := &c.win
	if s.Throttled || s.Failed {
		if w.measuring || !w.cut { // not a request of the load a cut already answered
			if s.Throttled {
				c.stats.Throttled++
			} else {
				c.stats.Failed++
			}
			c.setLimit(c.limit/2, true)
			return
		}
	}
	w.done++
	if !w.measuring {
		if w.done >= c.limit { // the old load drained: measure from here
			w.measuring, w.from, w.done = true, now, 0
		}
		return
	}
	w.bytes += s.Bytes
	if s.Latency > 0 {
		w.lat = append(w.lat, s.Latency)
	}
	if w.done >= c.limit {
		c.closeWindow(now)
	}
}

// setLimit sets the limit (within [Min, Max]) and starts a new window; cut says it was lowered
// because of a failure.
func (c *Controller) setLimit(n int, cut bool) {
	c.limit = min(max(n, c.cfg.Min), c.cfg.Max)
	c.stats.Low, c.stats.Peak = min(c.stats.Low, c.limit), max(c.stats.Peak, c.limit)
	c.win = window{cut: cut}
	if cut {
		c.base = 0
	}
	c.wakeLocked()
}

// closeWindow decides on a measured window that ended at now.
func (c *Controller) closeWindow(now time.Time) {
	w := c.win
	floor := c.noteFloor(w.lat)
	if med := median(w.lat); floor > 0 && float64(med) > c.cfg.LatencyFactor*float64(floor) && med-floor >= c.cfg.LatencySlack {
		c.stats.Slow++
		c.base = 0
		c.setLimit(c.limit-max(1, c.limit/4), false)
		return
	}
	el := now.Sub(w.from)
	if !w.waited || el <= 0 || c.limit >= c.cfg.Max {
		c.win = window{}
		return
	}
	tput := float64(w.bytes) / el.Seconds()
	switch {
	case c.hold > 0:
		c.hold--
		if c.hold == 0 {
			c.base = 0 // measure afresh before the next probe
		}
		c.win = window{}
	case c.base == 0 || c.limit <= c.baseAt:
		c.grow(tput)
	case tput >= c.base*(1+0.5*float64(c.limit-c.baseAt)/float64(c.baseAt)):
		c.grow(tput)
	default: // no more throughput at the higher limit: back, and hold
		c.hold = c.cfg.HoldWindows
		c.setLimit(c.baseAt, false)
	}
}

// grow takes tput at the current limit as the base and raises the limit by one.
func (c *Controller) grow(tput float64) {
	c.base, c.baseAt = tput, c.limit
	if c.limit >= c.cfg.Max {
		c.win = window{}
		return
	}
	c.stats.Grown++
	c.setLimit(c.limit+1, false)
}

// noteFloor adds a window's least latency to the floor's memory and returns the floor before it
// (0 when none).
func (c *Controller) noteFloor(lat []time.Duration) time.Duration {
	var floor time.Duration
	for _, f := range c.floors {
		if floor == 0 || f < floor {
			floor = f
		}
	}
	if len(lat) > 0 {
		c.floors = append(c.floors, slices.Min(lat))
		if len(c.floors) > c.cfg.FloorWindows {
			c.floors = c.floors[1:]
		}
	}
	return floor
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

type reportKey struct{}

// WithReport returns ctx carrying report. A client that retries a request itself (xet/cas) tells
// it of each attempt that failed in a way worth a retry (Report), so that the controller of the
// request sees the throttling and failures those retries absorb.
func WithReport(ctx context.Context, report func(Sample)) context.Context {
	return context.WithValue(ctx, reportKey{}, report)
}

// Report tells the report ctx carries (WithReport), if any, of a failed attempt of a request:
// throttled (429, 503) or failed otherwise.
func Report(ctx context.Context, throttled bool) {
	if f, ok := ctx.Value(reportKey{}).(func(Sample)); ok {
		f(Sample{Throttled: throttled, Failed: !throttled})
	}
}
