//go:build linux

package share

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// key returns a group key no other test (or process) uses.
func key(t *testing.T) string { return fmt.Sprintf("test %s %d", t.Name(), time.Now().UnixNano()) }

// echo is a handler that reports the size back as new bytes, counting its calls.
func echo(calls *atomic.Int64) Handler {
	return func(ctx context.Context, r Request) (Reply, error) {
		calls.Add(1)
		if r.Path == "fail" {
			return Reply{}, errors.New("the leader could not read it")
		}
		return Reply{NewBytes: r.Size, DedupedBytes: 1}, nil
	}
}

// The first member to ask leads and does its requests itself; the others' requests are done by the
// leader's handler and its replies come back; members of another key are not served by it.
func TestLeaderServesFollowers(t *testing.T) {
	k := key(t)
	var leaderCalls, otherCalls atomic.Int64
	leader := New(k, echo(&leaderCalls), zerolog.Nop())
	defer leader.Close()
	if _, ok := leader.Do(context.Background(), Request{Oid: "a", Size: 1, Path: "/a"}); ok {
		t.Fatal("the first member's request was handed over; it should lead and do it itself")
	}
	if !leader.Leading() {
		t.Fatal("the first member does not lead")
	}
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := New(k, echo(&otherCalls), zerolog.Nop())
			defer f.Close()
			for j := range 20 {
				size := int64(100*i + j)
				rep, ok := f.Do(context.Background(), Request{Oid: "o", Size: size, Path: "/p"})
				if !ok || rep.NewBytes != size || rep.DedupedBytes != 1 {
					t.Errorf("follower %d request %d: %+v, handed over %v", i, j, rep, ok)
					return
				}
			}
			if f.Leading() {
				t.Errorf("follower %d leads too", i)
			}
		}()
	}
	wg.Wait()
	if n := leaderCalls.Load(); n != 100 {
		t.Fatalf("the leader's handler ran %d times, want the followers' 100", n)
	}
	if n := otherCalls.Load(); n != 0 {
		t.Fatalf("a follower's handler ran %d times", n)
	}
	other := New(key(t)+"other", echo(&otherCalls), zerolog.Nop())
	defer other.Close()
	if _, ok := other.Do(context.Background(), Request{Size: 1}); ok || !other.Leading() {
		t.Fatal("a member of another key was served by this group's leader")
	}
}

// A failed request, or a leader that went away, leaves the request to the follower; once the leader
// is gone the next member to ask leads.
func TestFollowerFallsBack(t *testing.T) {
	k := key(t)
	var calls atomic.Int64
	leader := New(k, echo(&calls), zerolog.Nop())
	leader.Do(context.Background(), Request{})
	f := New(k, echo(&calls), zerolog.Nop())
	defer f.Close()
	if _, ok := f.Do(context.Background(), Request{Path: "fail"}); ok {
		t.Fatal("a request the leader failed was reported done")
	}
	if _, ok := f.Do(context.Background(), Request{Path: "/p", Size: 3}); !ok {
		t.Fatal("after one failed request the follower stopped handing them over")
	}
	leader.Close()
	if _, ok := f.Do(context.Background(), Request{Path: "/p", Size: 3}); ok {
		t.Fatal("a request was reported done by a leader that had left")
	}
	if _, ok := f.Do(context.Background(), Request{Path: "/p", Size: 3}); ok || !f.Leading() {
		t.Fatalf("after the leader left, the follower did not lead (leading %v)", f.Leading())
	}
	g := New(k, echo(&calls), zerolog.Nop())
	defer g.Close()
	if rep, ok := g.Do(context.Background(), Request{Path: "/p", Size: 9}); !ok || rep.NewBytes != 9 {
		t.Fatalf("the new leader did not serve: %+v %v", rep, ok)
	}
}

// Close waits for the requests the leader is serving, so a leader never exits with a follower's
// upload half done; a follower whose context ends stops waiting and does the request itself.
func TestCloseWaitsAndContextEnds(t *testing.T) {
	k := key(t)
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	var finished atomic.Bool
	h := func(ctx context.Context, r Request) (Reply, error) {
		started <- struct{}{}
		<-release
		finished.Store(true)
		return Reply{NewBytes: r.Size}, nil
	}
	leader := New(k, h, zerolog.Nop())
	leader.Do(context.Background(), Request{})
	f := New(k, h, zerolog.Nop())
	defer f.Close()
	got := make(chan bool, 1)
	go func() { _, ok := f.Do(context.Background(), Request{Size: 5}); got <- ok }()
	<-started
	closed := make(chan struct{})
	go func() { leader.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a request was being served")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-closed
	if !finished.Load() || !<-got {
		t.Fatal("the request being served when Close began was not answered")
	}

	leader2 := New(k, func(ctx context.Context, r Request) (Reply, error) { <-ctx.Done(); return Reply{}, ctx.Err() }, zerolog.Nop())
	leader2.Do(context.Background(), Request{})
	f2 := New(k, h, zerolog.Nop())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, ok := f2.Do(ctx, Request{}); ok {
		t.Fatal("a request whose context ended was reported done")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the follower waited %v after its context ended", d)
	}
	f2.Close()
	leader2.cancel() // the handler above waits for the leader's context
	leader2.Close()
}

// Frames: what writeFrame writes readFrame reads; too long a frame, a cut one and bad JSON are
// errors naming what was wrong, read without allocating the claimed length.
func TestFrames(t *testing.T) {
	var b bytes.Buffer
	in := Request{Oid: "abc", Size: 42, Path: "/x/y"}
	if err := writeFrame(&b, in); err != nil {
		t.Fatal(err)
	}
	var out Request
	if err := readFrame(&b, &out); err != nil || out != in {
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
	if err := writeFrame(&b, Request{Path: string(make([]byte, maxFrame))}); err == nil {
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
		var r Request
		if err := readFrame(bytes.NewReader(b), &r); err != nil {
			return
		}
		var buf bytes.Buffer
		if err := writeFrame(&buf, r); err != nil {
			t.Fatalf("a request read from a frame does not write back: %v", err)
		}
		var again Request
		if err := readFrame(&buf, &again); err != nil || again != r {
			t.Fatalf("read back %+v, %v; want %+v", again, err, r)
		}
	})
}
