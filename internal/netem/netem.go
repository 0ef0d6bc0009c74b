// Package netem emulates a network link in front of a TCP server, for benchmarks and tests: a
// bandwidth shared by every connection through the link (one token bucket per direction, so two
// connections each get about half of it) and a one-way latency added to every byte in each
// direction (half the round trip). Loopback only: the link forwards to a backend address given by
// its caller.
//
// The link is modelled as a serializer followed by a propagation delay: a segment read from one
// side is sent when the direction's bucket has room for it (segments of all connections queue
// behind each other in reservation order) and delivered to the other side one-way latency after
// its last byte was sent. Reading from a side stops while its segment waits for the bucket, so a
// fast sender is held back by TCP's own flow control on the loopback socket. What it does not
// emulate: TCP's window and slow start over the long link (a connection's throughput is not
// limited to its window divided by the round trip), loss, and reordering.
package netem

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Profile is a link: its bandwidth in bits per second (each direction) and its round-trip time.
type Profile struct {
	Name       string
	BitsPerSec int64
	RTT        time.Duration
}

// String is the profile as "name (100 Mbit/s, 40 ms RTT)".
func (p Profile) String() string {
	return fmt.Sprintf("%s (%g Mbit/s, %d ms RTT)", p.Name, float64(p.BitsPerSec)/1e6, p.RTT.Milliseconds())
}

// Profiles are the links of issue 35's targets.
var Profiles = map[string]Profile{
	"home": {Name: "home", BitsPerSec: 100e6, RTT: 40 * time.Millisecond},
	"far":  {Name: "far", BitsPerSec: 1e9, RTT: 150 * time.Millisecond},
	"thin": {Name: "thin", BitsPerSec: 20e6, RTT: 80 * time.Millisecond},
}

// ParseProfile reads a profile's name (home, far, thin) or "MBIT/RTT_MS" (e.g. "400/2": 400 Mbit/s,
// 2 ms round trip). A bandwidth of 0 means unlimited.
func ParseProfile(s string) (Profile, error) {
	if p, ok := Profiles[s]; ok {
		return p, nil
	}
	mbit, rtt, ok := strings.Cut(s, "/")
	m, err1 := strconv.ParseFloat(mbit, 64)
	r, err2 := strconv.ParseFloat(rtt, 64)
	if !ok || err1 != nil || err2 != nil || !(m >= 0 && m <= 1e6) || !(r >= 0 && r <= 60e3) { // NaN fails both
		return Profile{}, fmt.Errorf("link profile %q: want home, far, thin or MBIT/RTT_MS (e.g. 100/40)", s)
	}
	return Profile{Name: s, BitsPerSec: int64(m * 1e6), RTT: time.Duration(r * float64(time.Millisecond))}, nil
}

// segmentSize is the most one read takes from a side: 16 KiB is 1.3 ms at 100 Mbit/s, fine enough
// for the bucket, and few enough wake-ups at 1 Gbit/s (about 7,600 a second).
const segmentSize = 16 << 10

// queueSegments bounds the segments in flight on one connection's direction: 2,048 × 16 KiB = 32 MiB,
// above the far profile's one-way bandwidth-delay product (1 Gbit/s × 75 ms = 9.4 MB).
const queueSegments = 2048

// bucket is one direction's bandwidth: the time the link is done sending what was reserved.
type bucket struct {
	mu    sync.Mutex
	rate  float64 // bytes per second; 0 = unlimited
	free  time.Time
	slack time.Duration // how far the link may catch up after an idle spell or a late wake-up
}

// reserve queues n bytes and returns when their last byte is sent.
func (b *bucket) reserve(n int) time.Time {
	now := time.Now()
	if b.rate == 0 {
		return now
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if earliest := now.Add(-b.slack); b.free.Before(earliest) {
		b.free = earliest
	}
	b.free = b.free.Add(time.Duration(float64(n) / b.rate * float64(time.Second)))
	return b.free
}

// Link is an emulated link. Its Serve forwards connections; every connection of every Serve of one
// Link shares its bandwidth.
type Link struct {
	profile  Profile
	up, down bucket
	oneWay   time.Duration
	sentUp   atomic.Int64
	sentDown atomic.Int64
	conns    atomic.Int64
}

// New returns a link of profile p.
func New(p Profile) *Link {
	rate := float64(p.BitsPerSec) / 8
	// 2 ms of slack: a wake-up a little late does not lose the link's time, and the burst it allows
	// (250 KB at 1 Gbit/s) is small against any transfer measured through it.
	slack := 2 * time.Millisecond
	return &Link{profile: p, up: bucket{rate: rate, slack: slack}, down: bucket{rate: rate, slack: slack}, oneWay: p.RTT / 2}
}

// Profile is the link's profile.
func (l *Link) Profile() Profile { return l.profile }

// Sent is the bytes the link carried: up (client to backend) and down (backend to client).
func (l *Link) Sent() (up, down int64) { return l.sentUp.Load(), l.sentDown.Load() }

// Conns is the number of connections the link accepted.
func (l *Link) Conns() int64 { return l.conns.Load() }

// Serve accepts connections on ln and forwards each to backend (host:port) through the link, until
// ln is closed; it then returns the accept error. Connections open at that time go on.
func (l *Link) Serve(ln net.Listener, backend string) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		l.conns.Add(1)
		go l.forward(c, backend)
	}
}

func (l *Link) forward(client net.Conn, backend string) {
	server, err := net.DialTimeout("tcp", backend, 10*time.Second)
	if err != nil {
		client.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.pipe(client, server, &l.up, &l.sentUp) }()
	go func() { defer wg.Done(); l.pipe(server, client, &l.down, &l.sentDown) }()
	wg.Wait()
	client.Close()
	server.Close()
}

// lead is how far ahead of the link's sending a connection's reader may run.
const lead = 20 * time.Millisecond

type segment struct {
	buf *[segmentSize]byte
	n   int
	due time.Time
}

var bufs = sync.Pool{New: func() any { return new([segmentSize]byte) }}

// pipe carries src's bytes to dst through bucket b and the one-way delay; at src's end it closes
// dst's write side, at a failure to write it closes src so that its reader stops.
func (l *Link) pipe(src, dst net.Conn, b *bucket, sent *atomic.Int64) {
	q := make(chan segment, queueSegments)
	done := make(chan struct{})
	go func() {
		defer close(done)
		failed := false
		for s := range q {
			if failed {
				bufs.Put(s.buf)
				continue
			}
			if d := time.Until(s.due); d > 0 {
				time.Sleep(d)
			}
			_, err := dst.Write(s.buf[:s.n])
			bufs.Put(s.buf)
			if err != nil {
				failed = true
				src.Close()
				continue
			}
			sent.Add(int64(s.n))
		}
		if !failed {
			closeWrite(dst)
		}
	}()
	for {
		buf := bufs.Get().(*[segmentSize]byte)
		n, err := src.Read(buf[:])
		if n > 0 {
			sentAt := b.reserve(n)
			q <- segment{buf: buf, n: n, due: sentAt.Add(l.oneWay)}
			// The delivery times shape the link; the reader only keeps within lead of them, so that a
			// late wake-up of this goroutine does not leave the link idle.
			if d := time.Until(sentAt) - lead; d > 0 {
				time.Sleep(d)
			}
		} else {
			bufs.Put(buf)
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
}

// closeWrite half-closes c (the peer reads EOF), or closes it when it cannot be half-closed.
func closeWrite(c net.Conn) {
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		if tc.CloseWrite() == nil {
			return
		}
	}
	c.Close()
}

// Probe measures what the link passes: it sends n bytes through l from a backend of its own to a
// client (down) and from the client to the backend (up), one direction after the other, and returns
// each direction's rate in bits per second, counted from the first byte received to the last (the
// latency excluded).
func Probe(l *Link, n int64) (down, up float64, err error) {
	down, err = probe(l, n, true)
	if err != nil {
		return 0, 0, err
	}
	up, err = probe(l, n, false)
	return down, up, err
}

func probe(l *Link, n int64, fromBackend bool) (float64, error) {
	back, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer back.Close()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer front.Close()
	go l.Serve(front, back.Addr().String())
	type result struct {
		bits float64
		err  error
	}
	res := make(chan result, 1)
	go func() {
		c, err := back.Accept()
		if err != nil {
			res <- result{err: err}
			return
		}
		defer c.Close()
		if fromBackend {
			_, err = io.CopyN(c, zeros{}, n)
			res <- result{err: err}
			return
		}
		bits, err := receive(c, n)
		res <- result{bits: bits, err: err}
	}()
	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	var bits float64
	if fromBackend {
		bits, err = receive(c, n)
	} else {
		_, err = io.CopyN(c, zeros{}, n)
		closeWrite(c)
	}
	r := <-res
	if err = errors.Join(err, r.err); err != nil {
		return 0, err
	}
	if !fromBackend {
		bits = r.bits
	}
	return bits, nil
}

// receive reads n bytes from c and returns the rate in bits per second of the bytes after the first
// read, from the end of that read to the last.
func receive(c net.Conn, n int64) (float64, error) {
	buf := make([]byte, 64<<10)
	var first time.Time
	var got, firstBytes int64
	for got < n {
		k, err := c.Read(buf)
		if k > 0 && first.IsZero() {
			first, firstBytes = time.Now(), int64(k)
		}
		got += int64(k)
		if err != nil {
			if got < n {
				return 0, fmt.Errorf("probe: received %d of %d bytes: %w", got, n, err)
			}
			break
		}
	}
	secs := time.Since(first).Seconds()
	if got <= firstBytes || secs <= 0 {
		return 0, fmt.Errorf("probe: %d bytes arrived in one read; send more", got)
	}
	return float64(got-firstBytes) * 8 / secs, nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
