// Package share lets the agent processes of a push hand their small uploads to one of them.
//
// git-lfs runs lfs.concurrenttransfers agent processes (8 by default) and gives each one object at
// a time. For a small file the fixed costs of a process dominate: every object's fsync is its own,
// and the Go runtime's monitor thread wakes every 20 µs around it. One process doing the uploads of
// all eight shares the fsyncs (the store's group commit), the xorb and shard work and the runtime.
//
// The processes that use one store (and one shard cache) form a group, named by a key. The first
// to ask (Do) binds the group's socket and leads: it serves the others' requests with its Handler
// while it goes on with its own. The others connect and hand each request over, waiting for the
// reply. Sharing is only ever an optimisation: when there is no leader to reach, when the
// connection breaks (the leader was killed, or ended with its push) or when the leader's reply is
// an error, Do returns false and the caller does the request itself. A request is an upload of
// content-addressed data, so doing it twice is harmless.
//
// The socket is in Linux's abstract namespace, named from a hash of the key: it needs no file,
// vanishes with its process, and a second bind of the name fails, which is the election. Both sides
// check that the other runs as the same user (SO_PEERCRED). Elsewhere New returns a group that
// never shares.
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
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Request is an upload one process hands to the leader: the file at Path, which git-lfs says has
// SHA-256 Oid and Size bytes.
type Request struct {
	Oid  string `json:"oid"`
	Size int64  `json:"size"`
	Path string `json:"path"`
}

// Reply is what the leader did with a Request. Err is set when it failed.
type Reply struct {
	NewBytes     int64  `json:"new_bytes"`
	DedupedBytes int64  `json:"deduped_bytes"`
	Err          string `json:"error,omitempty"`
}

// Handler does a request in the leader, returning only once its data is durable.
type Handler func(ctx context.Context, r Request) (Reply, error)

// maxFrame bounds a message on the socket (a path and a few numbers).
const maxFrame = 64 << 10

// maxFailures: after this many broken connections a process stops trying to share.
const maxFailures = 3

// Group is this process's membership of the group of a key.
type Group struct {
	name string
	h    Handler
	log  zerolog.Logger

	mu       sync.Mutex // the follower side: one request at a time
	conn     net.Conn
	rw       io.ReadWriter // conn's reads and writes (rawio on Linux)
	failures int
	leading  bool
	closed   bool

	lmu     sync.Mutex // the leader side
	ln      net.Listener
	conns   map[net.Conn]bool // true while a request on it is being served
	serving sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

// New returns the membership of the group of key, joined lazily by the first Do. h serves other
// processes' requests if this one comes to lead.
func New(key string, h Handler, log zerolog.Logger) *Group {
	sum := sha256.Sum256([]byte("git-xet-transfer share v1\n" + key))
	ctx, cancel := context.WithCancel(context.Background())
	return &Group{name: "@git-xet-transfer/share/v1/" + hex.EncodeToString(sum[:16]), h: h, log: log,
		conns: map[net.Conn]bool{}, ctx: ctx, cancel: cancel}
}

// Leading reports whether this process leads its group.
func (g *Group) Leading() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leading
}

// Do hands r to the group's leader and returns its reply. ok is false when the caller must do r
// itself: this process leads (or has just come to), sharing is off or failed, or the leader
// answered with an error (logged).
func (g *Group) Do(ctx context.Context, r Request) (rep Reply, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leading || g.closed || g.failures >= maxFailures || !supported {
		return Reply{}, false
	}
	if g.conn == nil && !g.join() {
		return Reply{}, false
	}
	rep, err := g.roundTrip(ctx, r)
	if err != nil {
		g.conn.Close()
		g.conn = nil
		g.failures++
		g.log.Debug().Err(err).Str("oid", r.Oid).Msg("share: the leader did not answer; uploading here")
		return Reply{}, false
	}
	if rep.Err != "" {
		g.log.Warn().Str("oid", r.Oid).Str("leader_error", rep.Err).Msg("share: the leader failed the upload; uploading here")
		return Reply{}, false
	}
	return rep, true
}

// join connects to the leader, or leads when there is none (g.mu held). false: no connection (this
// process leads now, or the group cannot be reached).
func (g *Group) join() bool {
	for attempt := 0; attempt < 2; attempt++ {
		if ln, err := listen(g.name); err == nil {
			g.lead(ln)
			return false
		}
		c, err := dial(g.name)
		if err == nil {
			g.conn, g.rw = c, fast(c)
			return true
		}
		// The leader went away between the two calls; its name is free again.
		g.log.Debug().Err(err).Msg("share: no leader to reach")
	}
	g.failures++
	return false
}

// roundTrip sends r on the connection and reads the reply. ctx's end breaks it off.
func (g *Group) roundTrip(ctx context.Context, r Request) (Reply, error) {
	stop := context.AfterFunc(ctx, func() { g.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := writeFrame(g.rw, r); err != nil {
		return Reply{}, err
	}
	var rep Reply
	if err := readFrame(g.rw, &rep); err != nil {
		return Reply{}, err
	}
	return rep, nil
}

// lead makes this process the leader, serving connections on ln (g.mu held).
func (g *Group) lead(ln net.Listener) {
	g.leading = true
	g.lmu.Lock()
	g.ln = ln
	g.lmu.Unlock()
	g.log.Debug().Msg("share: leading the uploads of this store")
	go g.accept(ln)
}

func (g *Group) accept(ln net.Listener) {
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
		g.lmu.Lock()
		if g.ln == nil {
			g.lmu.Unlock()
			c.Close()
			return
		}
		g.conns[c] = false
		g.lmu.Unlock()
		go g.serve(c)
	}
}

// serve answers the requests of one connection, one at a time, until it breaks or Close.
func (g *Group) serve(c net.Conn) {
	defer func() {
		g.lmu.Lock()
		delete(g.conns, c)
		g.lmu.Unlock()
		c.Close()
	}()
	rw := fast(c)
	for {
		var r Request
		if err := readFrame(rw, &r); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				g.log.Debug().Err(err).Msg("share: reading a request")
			}
			return
		}
		if !g.begin(c) {
			return
		}
		rep, err := g.h(g.ctx, r)
		if err != nil {
			rep = Reply{Err: err.Error()}
		}
		werr := writeFrame(rw, rep)
		if !g.end(c) || werr != nil {
			return
		}
	}
}

// begin marks c busy; false once Close has begun (the request is not served: the follower does it).
func (g *Group) begin(c net.Conn) bool {
	g.lmu.Lock()
	defer g.lmu.Unlock()
	if g.ln == nil {
		return false
	}
	g.conns[c] = true
	g.serving.Add(1)
	return true
}

// end marks c idle again; false once Close has begun.
func (g *Group) end(c net.Conn) bool {
	g.lmu.Lock()
	defer g.lmu.Unlock()
	g.serving.Done()
	g.conns[c] = false
	return g.ln != nil
}

// Close leaves the group. A leader stops accepting, closes the idle connections and waits for the
// requests it is serving; their followers see the connection end at their next request and lead
// or upload themselves.
func (g *Group) Close() error {
	g.mu.Lock()
	g.closed = true
	if g.conn != nil {
		g.conn.Close()
		g.conn = nil
	}
	g.mu.Unlock()
	g.lmu.Lock()
	ln := g.ln
	g.ln = nil
	for c, busy := range g.conns {
		if !busy {
			c.Close()
		}
	}
	g.lmu.Unlock()
	if ln == nil {
		return nil
	}
	err := ln.Close()
	g.serving.Wait()
	g.cancel()
	return err
}

// writeFrame sends v as a 4-byte big-endian length and its JSON.
func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxFrame {
		return fmt.Errorf("share: a message of %d bytes (at most %d)", len(b), maxFrame)
	}
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// readFrame reads one message written by writeFrame into v.
func readFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
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
