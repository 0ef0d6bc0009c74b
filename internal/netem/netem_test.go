package netem

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// through starts a link of profile p in front of a backend that runs serve on each connection, and
// returns the link's address.
func through(t *testing.T, p Profile, serve func(net.Conn)) (*Link, string) {
	t.Helper()
	back, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Close() })
	go func() {
		for {
			c, err := back.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); serve(c) }()
		}
	}()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { front.Close() })
	l := New(p)
	go l.Serve(front, back.Addr().String())
	return l, front.Addr().String()
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// The bandwidth is the link's, not each connection's: two connections downloading 2 MiB each at
// once through 20 Mbit/s take as long as one of 4 MiB (1.68 s), where a per-connection limit (as
// toxiproxy's bandwidth toxic is) would let them finish in half that. The bound is a generous lower
// one: a slow machine only makes it longer.
func TestBandwidthIsShared(t *testing.T) {
	t.Parallel()
	data := random(t, 2<<20)
	l, addr := through(t, Profile{Name: "t", BitsPerSec: 20e6, RTT: 10 * time.Millisecond}, func(c net.Conn) { c.Write(data) })
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			got, err := io.ReadAll(c)
			if err == nil && !bytes.Equal(got, data) {
				t.Errorf("a connection received %d bytes that are not the %d sent", len(got), len(data))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 1400*time.Millisecond {
		t.Errorf("4 MiB over two connections through 20 Mbit/s took %v, want at least 1.4 s (the rate is not shared)", el)
	}
	if _, down := l.Sent(); down != 4<<20 {
		t.Errorf("the link counted %d bytes down, want %d", down, 4<<20)
	}
	if n := l.Conns(); n != 2 {
		t.Errorf("the link counted %d connections, want 2", n)
	}
}

// The upload direction is shaped too, and an upload's end reaches the backend (half close) with
// every byte intact.
func TestUploadShapedAndIntact(t *testing.T) {
	t.Parallel()
	data := random(t, 4<<20)
	got := make(chan []byte, 1)
	_, addr := through(t, Profile{Name: "t", BitsPerSec: 20e6, RTT: 10 * time.Millisecond}, func(c net.Conn) {
		b, _ := io.ReadAll(c)
		got <- b
		c.Write([]byte("ok"))
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	ack, err := io.ReadAll(c)
	if err != nil || string(ack) != "ok" {
		t.Fatalf("after the upload the backend answered %q, %v; want ok", ack, err)
	}
	if el := time.Since(start); el < 1400*time.Millisecond {
		t.Errorf("a 4 MiB upload through 20 Mbit/s took %v, want at least 1.4 s", el)
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Errorf("the backend received %d bytes that are not the %d sent", len(b), len(data))
	}
}

// Every exchange pays the round trip: five one-byte ping-pongs through a 100 ms link take at least
// 500 ms.
func TestLatencyEachDirection(t *testing.T) {
	t.Parallel()
	_, addr := through(t, Profile{Name: "t", RTT: 100 * time.Millisecond}, func(c net.Conn) { io.Copy(c, c) })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	b := make([]byte, 1)
	for i := range 5 {
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, b); err != nil || b[0] != byte(i) {
			t.Fatalf("ping %d: got %v, %v", i, b, err)
		}
	}
	if el := time.Since(start); el < 500*time.Millisecond {
		t.Errorf("5 round trips through a 100 ms link took %v, want at least 500 ms", el)
	}
}

// A backend that cannot be reached closes the client's connection instead of leaving it open.
func TestBackendDown(t *testing.T) {
	t.Parallel()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	go New(Profiles["home"]).Serve(front, addr)
	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("reading from a link whose backend is down: %d, %v; want EOF", n, err)
	}
}

func TestParseProfile(t *testing.T) {
	for in, want := range map[string]Profile{
		"home":   {Name: "home", BitsPerSec: 100e6, RTT: 40 * time.Millisecond},
		"far":    {Name: "far", BitsPerSec: 1e9, RTT: 150 * time.Millisecond},
		"thin":   {Name: "thin", BitsPerSec: 20e6, RTT: 80 * time.Millisecond},
		"400/2":  {Name: "400/2", BitsPerSec: 400e6, RTT: 2 * time.Millisecond},
		"0/0":    {Name: "0/0"},
		"2.5/10": {Name: "2.5/10", BitsPerSec: 2.5e6, RTT: 10 * time.Millisecond},
	} {
		got, err := ParseProfile(in)
		if err != nil || got != want {
			t.Errorf("ParseProfile(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "moon", "100", "100/", "/40", "-1/40", "100/-1", "x/40", "NaN/1", "1/NaN", "Inf/1", "1e9/1"} {
		if p, err := ParseProfile(in); err == nil {
			t.Errorf("ParseProfile(%q) = %+v, want an error", in, p)
		}
	}
}

func FuzzParseProfile(f *testing.F) {
	f.Add("home")
	f.Add("100/40")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseProfile(s)
		if err != nil {
			return
		}
		if p.BitsPerSec < 0 || p.RTT < 0 {
			t.Fatalf("ParseProfile(%q) = %+v: negative", s, p)
		}
	})
}
