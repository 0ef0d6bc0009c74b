// Package share lets the agent processes of a push hand their conversations with git-lfs to one
// of them.
//
// git-lfs runs lfs.concurrenttransfers agent processes (8 by default) and gives each one object at
// a time. For a small file the fixed costs of a process dominate: every object's fsync is its own,
// every message wakes a process and its runtime. One process doing the transfers of all eight
// shares the fsyncs (the store's group commit), the xorb and shard work and the runtime.
//
// The processes of a push that use one store form a group, named by a key. The first to ask
// (HandOff) binds the group's socket and leads: it goes on with its own conversation and serves the
// others'. Each of the others sends the leader its stdin and stdout (SCM_RIGHTS) with the bytes it
// had read and not used, and then waits, using no CPU: the leader reads git-lfs's requests from
// that stdin and answers on that stdout itself, until the conversation ends (terminate: the
// follower is told to exit) or the leader closes (it stops at a request boundary and gives the
// conversation back, with the bytes it had read and not used; the follower goes on, and may lead
// or hand off again). Handing off is only ever an optimisation: when there is no leader to reach
// the caller goes on itself. Once the leader has the pipes, though, a follower cannot know which
// request the leader was serving when it died; a leader that ends without giving a conversation
// back (killed) makes its followers exit with an error, so that git-lfs fails their transfers
// instead of waiting for answers that will never come, and a repeated push does them again.
//
// The socket is in Linux's abstract namespace, named from a hash of the key: it needs no file,
// vanishes with its process, and a second bind of the name fails, which is the election. Both sides
// check that the other runs as the same user (SO_PEERCRED). Elsewhere a group never hands off.
package share

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Pipe is a conversation a follower handed to the leader: git-lfs's requests come on In, the
// answers go to Out.
type Pipe struct {
	In       io.Reader // the follower's stdin (its read deadline ends reads when the leader closes)
	Out      io.Writer // the follower's stdout
	Buffered []byte    // what the follower had read from In and not used: it comes first
	Dir      string    // the follower's working directory (for relative paths)
	Pid      int       // the follower's process id (for logs)

	stop   chan struct{}
	in     *os.File
	cancel context.CancelFunc // ends the handler's context
}

// Stopping is closed when the leader closes: the handler returns at its next request boundary
// (reads from In then fail, and its context ends, cancelling a transfer in flight), with what it
// read and did not use in Outcome.Resume.
func (p *Pipe) Stopping() <-chan struct{} { return p.stop }

// Outcome is how a handed conversation ends for the follower.
type Outcome struct {
	Exit   bool   `json:"exit,omitempty"`   // the conversation is over: the follower exits
	Err    string `json:"error,omitempty"`  // Exit with an error: the follower exits non-zero with it
	Resume []byte `json:"resume,omitempty"` // not Exit: the follower goes on, reading these bytes first
}

// Handler serves a conversation in the leader and says how it ended. Its ctx is the conversation's
// own: it ends when the follower is gone (its socket ends), when the leader's own context ends (the
// process is stopped), and when Close stops the conversation.
type Handler func(ctx context.Context, p *Pipe) Outcome

// hello is the follower's message that comes with its stdin and stdout.
type hello struct {
	Buffered []byte `json:"buffered,omitempty"`
	Dir      string `json:"dir"`
	Pid      int    `json:"pid"`
}

// maxFrame bounds a message on the socket (a directory, and bytes read ahead: at most a request).
const maxFrame = 1 << 20

// maxFailures: after this many failed attempts to reach a leader a process stops trying.
const maxFailures = 3

// helloTimeout bounds the wait for a follower's hand-off message once it connected: a process
// that connects and sends nothing (or half a message) does not hold a goroutine of the leader. A
// variable for tests.
var helloTimeout = 10 * time.Second

// Group is this process's membership of the group of a key.
type Group struct {
	name string
	h    Handler
	log  zerolog.Logger

	mu       sync.Mutex // the follower side
	failures int
	leading  bool
	closed   bool

	lmu    sync.Mutex // the leader side
	ln     net.Listener
	pipes  map[*Pipe]bool
	idle   chan struct{}      // closed when the last conversation served ends (Close waits for it)
	conns  sync.WaitGroup     // the accept loop and a goroutine per connection (serve)
	cancel context.CancelFunc // ends the leader's context (Close)
}

// New returns the membership of the group of key, joined by the first HandOff. h serves other
// processes' conversations if this one comes to lead.
func New(key string, h Handler, log zerolog.Logger) *Group {
	sum := sha256.Sum256([]byte("git-xet-transfer share v2\n" + key))
	return &Group{name: "@git-xet-transfer/share/v2/" + hex.EncodeToString(sum[:16]), h: h, log: log,
		pipes: map[*Pipe]bool{}}
}

// Leading reports whether this process leads its group.
func (g *Group) Leading() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leading
}

// HandOff hands the conversation on in and out (stdin and stdout, non-blocking: see
// cmd/git-xet-transfer) to the group's leader, with buffered, the bytes read from in and not used,
// and waits until the leader ends it or gives it back. handed is false when the caller goes on
// itself: this process leads (or has just come to), or no leader could be reached. Once handed,
// err is set when the leader ended without a word (killed): the conversation's state is lost, the
// caller must exit with the error.
func (g *Group) HandOff(ctx context.Context, in, out *os.File, buffered []byte) (o Outcome, handed bool, err error) {
	g.mu.Lock()
	if g.leading || g.closed || g.failures >= maxFailures || !supported {
		g.mu.Unlock()
		return Outcome{}, false, nil
	}
	c := g.join(ctx)
	if c == nil {
		g.mu.Unlock()
		return Outcome{}, false, nil
	}
	dir, _ := os.Getwd()
	if err := sendPipe(c, hello{Buffered: buffered, Dir: dir, Pid: os.Getpid()}, in, out); err != nil {
		c.Close()
		g.failures++
		g.mu.Unlock()
		g.log.Debug().Err(err).Msg("share: could not hand the conversation to the leader; going on here")
		return Outcome{}, false, nil
	}
	g.mu.Unlock()
	g.log.Debug().Msg("share: the conversation is handed to the leader")

	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	err = readFrame(fast(c), &o)
	stop()
	c.Close()
	switch {
	case ctx.Err() != nil:
		return Outcome{}, true, ctx.Err()
	case err != nil:
		return Outcome{}, true, fmt.Errorf("the git-xet-transfer process serving this one's transfers (the leader of the push's agents) ended without finishing them (%v); run the push again", err)
	}
	return o, true, nil
}

// join connects to the leader, or leads when there is none (g.mu held). nil: no connection (this
// process leads now, or the group cannot be reached).
func (g *Group) join(ctx context.Context) net.Conn {
	for attempt := 0; attempt < 2; attempt++ {
		if ln, err := listen(g.name); err == nil {
			g.lead(ctx, ln)
			return nil
		}
		c, err := dial(g.name)
		if err == nil {
			return c
		}
		// The leader went away between the two calls; its name is free again.
		g.log.Debug().Err(err).Msg("share: no leader to reach")
	}
	g.failures++
	return nil
}

// lead makes this process the leader, serving connections on ln (g.mu held). The conversations it
// serves outlive the HandOff that elected it, not ctx: ctx is the process's (it ends on Ctrl-C or
// SIGTERM), and their own contexts end with it, or when Close stops them.
func (g *Group) lead(ctx context.Context, ln net.Listener) {
	g.leading = true
	ctx, cancel := context.WithCancel(ctx)
	g.lmu.Lock()
	g.ln, g.cancel = ln, cancel
	g.lmu.Unlock()
	g.log.Debug().Msg("share: leading the transfers of this store")
	g.conns.Go(func() { g.accept(ctx, ln) })
}

// accept serves each connection on ln until ln is closed; ctx is the leader's.
func (g *Group) accept(ctx context.Context, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		if err := checkPeer(c); err != nil {
			g.log.Warn().Err(err).Msg("share: refusing a connection")
			c.Close()
			continue
		}
		g.conns.Go(func() { g.serve(ctx, c) })
	}
}

// serve takes the conversation a follower sends on c, runs the handler on it and tells the
// follower how it ended.
func (g *Group) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	h, in, out, err := recvHello(ctx, c)
	if err != nil {
		g.log.Debug().Err(err).Msg("share: reading a follower's hand-off")
		return
	}
	defer in.Close()
	defer out.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &Pipe{In: fastFile(in), Out: fastFile(out), Buffered: h.Buffered, Dir: h.Dir, Pid: h.Pid,
		stop: make(chan struct{}), in: in, cancel: cancel}
	if !g.begin(p) {
		// Closing: give it back untouched.
		_ = writeFrame(fast(c), Outcome{Resume: h.Buffered})
		return
	}
	g.log.Debug().Int("follower", h.Pid).Msg("share: serving a follower's transfers")
	var watch sync.WaitGroup
	watch.Go(func() { watchFollower(c, cancel) })
	o := g.h(ctx, p)
	g.end(p)
	_ = c.SetReadDeadline(time.Unix(1, 0)) // ends the watch
	watch.Wait()
	if err := writeFrame(fast(c), o); err != nil {
		g.log.Warn().Err(err).Int("follower", h.Pid).Msg("share: could not tell a follower how its conversation ended")
	}
}

// recvHello reads a follower's hand-off on c (recvPipe) within helloTimeout, or until ctx ends.
func recvHello(ctx context.Context, c net.Conn) (hello, *os.File, *os.File, error) {
	_ = c.SetReadDeadline(time.Now().Add(helloTimeout))
	stop := context.AfterFunc(ctx, func() { _ = c.SetReadDeadline(time.Unix(1, 0)) })
	h, in, out, err := recvPipe(c)
	if !stop() && err == nil { // the leader is closing
		in.Close()
		out.Close()
		return hello{}, nil, nil, context.Cause(ctx)
	}
	_ = c.SetReadDeadline(time.Time{})
	return h, in, out, err
}

// watchFollower cancels the conversation of the follower on c when c ends: the follower sends
// nothing after its hand-off and waits for the outcome, so a read that returns means it is gone
// (killed, or stopped by Ctrl-C), and nobody is left to answer for its transfers. It returns when
// c's read deadline passes (its serve ends it) or c ends.
func watchFollower(c net.Conn, cancel context.CancelFunc) {
	var b [1]byte
	if _, err := fast(c).Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		cancel()
	}
}

// begin registers p as served; false once Close has begun.
func (g *Group) begin(p *Pipe) bool {
	g.lmu.Lock()
	defer g.lmu.Unlock()
	if g.ln == nil {
		return false
	}
	g.pipes[p] = true
	return true
}

func (g *Group) end(p *Pipe) {
	g.lmu.Lock()
	defer g.lmu.Unlock()
	delete(g.pipes, p)
	if len(g.pipes) == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// CloseGrace is how long a closing leader lets the conversations it serves end on their own before
// it gives them back: at the end of a push git-lfs terminates all its agents at once, and a
// conversation ended by its terminate costs less than one given back (its follower would read the
// terminate itself, and may first elect a new leader).
var CloseGrace = 2 * time.Second

// Close leaves the group. A leader stops accepting, lets the conversations it serves end on their
// own for CloseGrace, then stops each of the others: its context ends (a transfer in flight is
// cancelled and answered with its error) and it is given back at the request boundary that follows;
// Close then waits for every conversation and connection to be given back or ended, and ends the
// leader's context. A follower waiting in HandOff is not affected (its context ends that).
func (g *Group) Close() error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.lmu.Lock()
	ln, cancel := g.ln, g.cancel
	g.ln = nil
	g.lmu.Unlock()
	if ln == nil {
		return nil
	}
	err := ln.Close()
	g.waitServed(CloseGrace)
	g.lmu.Lock()
	for p := range g.pipes {
		close(p.stop)
		_ = p.in.SetReadDeadline(time.Unix(1, 0)) // a read waiting for the next request returns
		p.cancel()
	}
	g.lmu.Unlock()
	g.waitServed(-1)
	cancel() // hand-offs still being read are refused
	g.conns.Wait()
	return err
}

// waitServed waits until no conversation is served, or d has passed (d < 0: no limit). Close
// calls it, once no conversation can begin.
func (g *Group) waitServed(d time.Duration) {
	g.lmu.Lock()
	if len(g.pipes) == 0 {
		g.lmu.Unlock()
		return
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.lmu.Unlock()
	if d < 0 {
		<-idle
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

// writeFrame sends v as a 4-byte big-endian length and its JSON.
func writeFrame(w io.Writer, v any) error {
	b, err := frame(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// frame is v's message: a 4-byte big-endian length and its JSON.
func frame(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) > maxFrame {
		return nil, fmt.Errorf("share: a message of %d bytes (at most %d)", len(b), maxFrame)
	}
	return append(binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b))), b...), nil
}

// readFrame reads one message written by writeFrame into v.
func readFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	return readBody(r, hdr, v)
}

// readBody reads the rest of a message whose header is hdr into v.
func readBody(r io.Reader, hdr [4]byte, v any) error {
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return fmt.Errorf("share: a message of %d bytes (at most %d)", n, maxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("share: a message cut short: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("share: a malformed message: %w", err)
	}
	return nil
}

// errNoPipe: a hand-off message came without the two descriptors it must carry.
var errNoPipe = errors.New("share: a hand-off without its stdin and stdout")
