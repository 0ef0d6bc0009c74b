//go:build linux

package share

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// key returns a group key no other test (or process) uses.
func key(t *testing.T) string { return fmt.Sprintf("test %s %d", t.Name(), time.Now().UnixNano()) }

// conv is a follower's side of a conversation: git-lfs writes requests to req and reads answers
// from resp; the follower's stdin and stdout are in and out.
type conv struct {
	in, out   *os.File
	req, resp *os.File
}

func newConv(t *testing.T) *conv {
	t.Helper()
	inR, inW := testutil.Pipe(t)
	outR, outW := testutil.Pipe(t)
	return &conv{in: inR, out: outW, req: inW, resp: outR}
}

// echo is a handler that answers each line of its conversation with "pid:line", ends it on "end"
// and gives it back (with what it read and did not use) when the leader closes.
func echo(served chan<- int) Handler {
	return func(ctx context.Context, p *Pipe) Outcome {
		if served != nil {
			served <- p.Pid
		}
		r := bufio.NewReader(io.MultiReader(bytes.NewReader(p.Buffered), p.In))
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				select {
				case <-p.Stopping():
					n := r.Buffered()
					rest, _ := r.Peek(n)
					return Outcome{Resume: append([]byte(line), rest...)}
				default:
				}
				return Outcome{Exit: true, Err: err.Error()}
			}
			if line == "end\n" {
				return Outcome{Exit: true}
			}
			fmt.Fprintf(p.Out, "%d:%s", p.Pid, line)
		}
	}
}

// The first member to hand off leads and goes on itself; the others' conversations are served by
// the leader: their buffered bytes first, then their stdin, the answers on their stdout, until the
// handler ends them. A member of another key is not served by this leader.
func TestLeaderServesFollowers(t *testing.T) {
	k := key(t)
	leader := New(k, echo(nil), zerolog.Nop())
	defer leader.Close()
	lc := newConv(t)
	if _, handed, err := leader.HandOff(context.Background(), lc.in, lc.out, nil); handed || err != nil {
		t.Fatalf("the first member handed its conversation off (%v, %v); it should lead", handed, err)
	}
	if !leader.Leading() {
		t.Fatal("the first member does not lead")
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newConv(t)
			f := New(k, echo(nil), zerolog.Nop())
			defer f.Close()
			go func() {
				for j := range 10 {
					fmt.Fprintf(c.req, "req %d.%d\n", i, j)
				}
				fmt.Fprintf(c.req, "end\n")
			}()
			type result struct {
				o      Outcome
				handed bool
				err    error
			}
			got := make(chan result, 1)
			go func() {
				o, handed, err := f.HandOff(context.Background(), c.in, c.out, []byte(fmt.Sprintf("ahead %d\n", i)))
				got <- result{o, handed, err}
			}()
			r := bufio.NewReader(c.resp)
			want := []string{fmt.Sprintf("ahead %d", i)}
			for j := range 10 {
				want = append(want, fmt.Sprintf("req %d.%d", i, j))
			}
			for _, w := range want {
				line, err := r.ReadString('\n')
				if err != nil || line != fmt.Sprintf("%d:%s\n", os.Getpid(), w) {
					t.Errorf("follower %d: answer %q, %v; want %q", i, line, err, w)
					return
				}
			}
			res := <-got
			if !res.handed || res.err != nil || !res.o.Exit || res.o.Err != "" {
				t.Errorf("follower %d: outcome %+v, handed %v, %v; want a clean exit", i, res.o, res.handed, res.err)
			}
			if f.Leading() {
				t.Errorf("follower %d leads too", i)
			}
		}()
	}
	wg.Wait()

	other := New(k+"other", echo(nil), zerolog.Nop())
	defer other.Close()
	oc := newConv(t)
	if _, handed, _ := other.HandOff(context.Background(), oc.in, oc.out, nil); handed || !other.Leading() {
		t.Fatal("a member of another key was served by this group's leader")
	}
}

// Close stops at a request boundary: it waits for a request being served, then gives each
// conversation back with the bytes read and not used, and the follower goes on reading its stdin
// after them (here half a line, which the leader may or may not have read). A member that asks after the leader left leads.
func TestCloseGivesConversationsBack(t *testing.T) {
	defer func(d time.Duration) { CloseGrace = d }(CloseGrace)
	CloseGrace = 0
	k := key(t)
	release := make(chan struct{})
	h := func(ctx context.Context, p *Pipe) Outcome {
		r := bufio.NewReader(p.In)
		line, _ := r.ReadString('\n')
		fmt.Fprintf(p.Out, "busy with %s", line)
		<-release // a request in progress when Close begins
		fmt.Fprintf(p.Out, "done\n")
		return echo(nil)(ctx, &Pipe{In: io.MultiReader(r, p.In), Out: p.Out, stop: p.stop, in: p.in})
	}
	leader := New(k, h, zerolog.Nop())
	lc := newConv(t)
	leader.HandOff(context.Background(), lc.in, lc.out, nil)
	c := newConv(t)
	f := New(k, h, zerolog.Nop())
	defer f.Close()
	got := make(chan Outcome, 1)
	go func() {
		o, handed, err := f.HandOff(context.Background(), c.in, c.out, nil)
		if !handed || err != nil {
			t.Errorf("handed %v, %v", handed, err)
		}
		got <- o
	}()
	fmt.Fprintf(c.req, "first\n")
	r := bufio.NewReader(c.resp)
	if line, _ := r.ReadString('\n'); line != "busy with first\n" {
		t.Fatalf("the leader answered %q", line)
	}
	closed := make(chan struct{})
	go func() { leader.Close(); close(closed) }()
	if !testutil.Eventually(10*time.Second, func() bool { return stopped(leader) }) {
		t.Fatal("Close did not stop the conversation")
	}
	select {
	case <-closed:
		t.Fatal("Close returned while a request was being served")
	default:
	}
	fmt.Fprintf(c.req, "sec") // half a request: given back, or left in the pipe
	close(release)
	<-closed
	if line, _ := r.ReadString('\n'); line != "done\n" {
		t.Fatalf("the request in progress ended with %q", line)
	}
	o := <-got
	if o.Exit {
		t.Fatalf("ended (%+v), want the conversation given back", o)
	}
	fmt.Fprintf(c.req, "ond\n")
	rest, _ := bufio.NewReader(io.MultiReader(bytes.NewReader(o.Resume), c.in)).ReadString('\n')
	if rest != "second\n" {
		t.Fatalf("the follower read %q after the conversation came back", rest)
	}
	if _, handed, _ := f.HandOff(context.Background(), c.in, c.out, nil); handed || !f.Leading() {
		t.Fatal("after the leader left, the follower did not lead")
	}
}

// A closing leader lets a conversation that ends within CloseGrace (git-lfs terminating all its
// agents at the end of a push) end on its own: the follower is told to exit, not given it back.
func TestCloseLetsConversationsEnd(t *testing.T) {
	k := key(t)
	leader := New(k, echo(nil), zerolog.Nop())
	lc := newConv(t)
	leader.HandOff(context.Background(), lc.in, lc.out, nil)
	c := newConv(t)
	f := New(k, nil, zerolog.Nop())
	defer f.Close()
	got := make(chan Outcome, 1)
	go func() {
		o, _, _ := f.HandOff(context.Background(), c.in, c.out, nil)
		got <- o
	}()
	fmt.Fprintf(c.req, "x\n")
	if line, _ := bufio.NewReader(c.resp).ReadString('\n'); !strings.HasSuffix(line, ":x\n") {
		t.Fatalf("answer %q", line)
	}
	closed := make(chan struct{})
	go func() { leader.Close(); close(closed) }()
	if !testutil.Eventually(10*time.Second, func() bool { return closing(leader) }) {
		t.Fatal("Close did not begin")
	}
	fmt.Fprintf(c.req, "end\n")
	<-closed
	if o := <-got; !o.Exit || o.Err != "" {
		t.Fatalf("outcome %+v, want a clean exit", o)
	}
}

// A leader that ends without a word once it has the pipes (killed) leaves the follower an error
// telling the user to push again: the follower cannot know which request was lost. A follower
// whose context ends stops waiting.
func TestLeaderGoneAndContextEnds(t *testing.T) {
	k := key(t)
	probe := New(k, nil, zerolog.Nop())
	ln, err := listen(probe.name) // a leader that reads the hand-off and dies
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if _, in, out, err := recvPipe(c); err == nil {
				in.Close()
				out.Close()
			}
			c.Close()
		}
	}()
	c := newConv(t)
	f := New(k, nil, zerolog.Nop())
	_, handed, err := f.HandOff(context.Background(), c.in, c.out, nil)
	if !handed || err == nil || !strings.Contains(err.Error(), "run the push again") {
		t.Fatalf("handed %v, error %v; want an error telling to push again", handed, err)
	}

	ln.Close()
	leader := New(k, func(ctx context.Context, p *Pipe) Outcome { <-ctx.Done(); return Outcome{Exit: true} }, zerolog.Nop())
	lc := newConv(t)
	leader.HandOff(context.Background(), lc.in, lc.out, nil)
	f2 := New(k, nil, zerolog.Nop())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, handed, err := f2.HandOff(ctx, c.in, c.out, nil); !handed || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("handed %v, %v; want the context's end", handed, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the follower waited %v after its context ended", d)
	}
	leader.cancel() // the handler above waits for the leader's context
	leader.Close()
}

// A hand-off without its two descriptors is refused (and a descriptor that came is closed).
func TestHandOffWithoutPipes(t *testing.T) {
	name := "@" + key(t)
	ln, err := listen(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errs := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errs <- err
			return
		}
		defer c.Close()
		_, _, _, err = recvPipe(c)
		errs <- err
	}()
	c, err := dial(name)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := writeFrame(c, hello{Dir: "/", Pid: 1}); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; !errors.Is(err, errNoPipe) {
		t.Fatalf("got %v, want %v", err, errNoPipe)
	}
}

// Frames: what writeFrame writes readFrame reads; too long a frame, a cut one and bad JSON are
// errors naming what was wrong, read without allocating the claimed length.
func TestFrames(t *testing.T) {
	var b bytes.Buffer
	in := Outcome{Resume: []byte("{\"event\":\"terminate\"}\n")}
	if err := writeFrame(&b, in); err != nil {
		t.Fatal(err)
	}
	var out Outcome
	if err := readFrame(&b, &out); err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("read back %+v, %v", out, err)
	}
	for name, raw := range map[string][]byte{
		"too long": {0xff, 0xff, 0xff, 0xff},
		"cut":      {0, 0, 0, 10, '{'},
		"not json": {0, 0, 0, 2, 'x', 'y'},
	} {
		if err := readFrame(bytes.NewReader(raw), &out); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := writeFrame(&b, hello{Dir: string(make([]byte, maxFrame))}); err == nil {
		t.Error("a frame over the limit was written")
	}
}

// A connection from another user is refused: checkPeer reads the peer's credentials, which on one
// machine can only be our own, so this checks that a socket of ours passes and a non-unix one fails.
func TestCheckPeer(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if err := checkPeer(a); err == nil {
		t.Fatal("a connection that is not a unix socket passed")
	}
	ln, err := listen("@" + key(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			if err := checkPeer(c); err != nil {
				t.Error(err)
			}
		}
	}()
	c, err := dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// FuzzReadFrame: any bytes on the socket give a message or an error, never a panic or an
// allocation past maxFrame; what is read writes back as a frame that reads the same.
func FuzzReadFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var h hello
		if err := readFrame(bytes.NewReader(b), &h); err == nil {
			var buf bytes.Buffer
			if err := writeFrame(&buf, h); err != nil {
				t.Fatalf("a hello read from a frame does not write back: %v", err)
			}
			var again hello
			if err := readFrame(&buf, &again); err != nil || !reflect.DeepEqual(again, h) {
				t.Fatalf("read back %+v, %v; want %+v", again, err, h)
			}
		}
		var o Outcome
		_ = readFrame(bytes.NewReader(b), &o)
	})
}

// closing reports whether g's Close has begun (it accepts no more conversations).
func closing(g *Group) bool {
	g.lmu.Lock()
	defer g.lmu.Unlock()
	return g.ln == nil
}

// stopped reports whether g's Close has stopped the conversations it serves (after CloseGrace).
func stopped(g *Group) bool {
	g.lmu.Lock()
	defer g.lmu.Unlock()
	for p := range g.pipes {
		select {
		case <-p.stop:
		default:
			return false
		}
	}
	return len(g.pipes) > 0
}

// startLeader makes a member of a new group lead it with handler h.
func startLeader(t *testing.T, h Handler) (k string, leader *Group) {
	t.Helper()
	k = key(t)
	leader = New(k, h, zerolog.Nop())
	lc := newConv(t)
	if _, handed, _ := leader.HandOff(context.Background(), lc.in, lc.out, nil); handed || !leader.Leading() {
		t.Fatal("the first member does not lead")
	}
	return k, leader
}

// handOff hands c's conversation to the leader of k on a goroutine of its own; the outcome comes
// on the returned channel.
func handOff(t *testing.T, k string, c *conv) <-chan Outcome {
	t.Helper()
	f := New(k, nil, zerolog.Nop())
	t.Cleanup(func() { f.Close() })
	got := make(chan Outcome, 1)
	go func() {
		o, _, _ := f.HandOff(context.Background(), c.in, c.out, nil)
		got <- o
	}()
	return got
}

// Close stops the conversations still served after CloseGrace by ending their context before it
// waits for them: a handler busy with a transfer that runs until cancelled ends, and Close returns.
func TestCloseCancelsBeforeWaiting(t *testing.T) {
	defer func(d time.Duration) { CloseGrace = d }(CloseGrace)
	CloseGrace = 0
	busy := make(chan struct{})
	k, leader := startLeader(t, func(ctx context.Context, p *Pipe) Outcome {
		close(busy)
		<-ctx.Done() // a transfer in flight, stopped only by its context
		return Outcome{}
	})
	handOff(t, k, newConv(t))
	<-busy
	closed := make(chan struct{})
	go func() { leader.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a conversation without ending its context")
	}
}

// A follower that goes away after handing off its conversation (killed, or stopped by Ctrl-C: its
// socket ends) ends that conversation's context in the leader: nobody is left to answer to.
func TestFollowerGoneEndsItsConversation(t *testing.T) {
	ended := make(chan struct{})
	served := make(chan struct{})
	k, leader := startLeader(t, func(ctx context.Context, p *Pipe) Outcome {
		close(served)
		<-ctx.Done()
		close(ended)
		return Outcome{Exit: true}
	})
	defer leader.Close()
	probe := New(k, nil, zerolog.Nop())
	c, err := dial(probe.name)
	if err != nil {
		t.Fatal(err)
	}
	fc := newConv(t)
	if err := sendPipe(c, hello{Dir: "/", Pid: 1}, fc.in, fc.out); err != nil {
		t.Fatal(err)
	}
	<-served
	c.Close() // the follower is gone
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the conversation of a follower that went away was not ended")
	}
}

// A connection that sends no hand-off is closed after helloTimeout: it holds no goroutine of the
// leader.
func TestHandOffNeverSent(t *testing.T) {
	defer func(d time.Duration) { helloTimeout = d }(helloTimeout)
	helloTimeout = 100 * time.Millisecond
	k, leader := startLeader(t, echo(nil))
	defer leader.Close()
	probe := New(k, nil, zerolog.Nop())
	c, err := dial(probe.name)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); read <- err }()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("the leader answered a connection that handed nothing off")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leader still waited for a hand-off 10 s after the connection")
	}
}
