package cas_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
	"golang.org/x/net/http2"
)

// goawayFirst is a listener whose first connection is an HTTP/2 server that answers the first
// request's headers with GOAWAY (last stream 0, no error: "send it again elsewhere"), as a server
// going idle or shutting down does. Go's HTTP/2 transport then retries: it takes a new body from
// GetBody for the connection it got the GOAWAY on, finds that connection unusable, and returns
// to net/http, which takes yet another body for a new connection and never closes the one in
// between.
type goawayFirst struct {
	net.Listener
	tls  func() *tls.Config // the server's, set by StartTLS before it accepts
	once sync.Once
	sent atomic.Bool
	wg   sync.WaitGroup
}

func (l *goawayFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		first := false
		l.once.Do(func() { first = true })
		if !first {
			return c, nil
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer c.Close()
			l.goaway(tls.Server(c, l.tls()))
		}()
	}
}

// goaway speaks just enough HTTP/2 on c: the preface, empty SETTINGS, and GOAWAY on the first
// HEADERS; then it reads until the client hangs up.
func (l *goawayFirst) goaway(c *tls.Conn) {
	if c.Handshake() != nil {
		return
	}
	preface := make([]byte, 24)
	if _, err := io.ReadFull(c, preface); err != nil {
		return
	}
	frame := func(typ, flags byte, stream uint32, payload []byte) []byte {
		h := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(h[5:], stream)
		return append(h, payload...)
	}
	if _, err := c.Write(frame(0x4, 0, 0, nil)); err != nil { // SETTINGS
		return
	}
	for {
		h := make([]byte, 9)
		if _, err := io.ReadFull(c, h); err != nil {
			return
		}
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			return
		}
		switch typ, flags := h[3], h[4]; {
		case typ == 0x4 && flags&0x1 == 0: // the client's SETTINGS: acknowledged
			if _, err := c.Write(frame(0x4, 0x1, 0, nil)); err != nil {
				return
			}
		case typ == 0x1 && !l.sent.Load(): // HEADERS: go away, last stream 0, NO_ERROR
			l.sent.Store(true)
			if _, err := c.Write(frame(0x7, 0, 0, make([]byte, 8))); err != nil {
				return
			}
		}
	}
}

// A xorb upload over HTTP/2 whose first connection goes away before the request is taken ends
// with the answer of the server the transport retried on, at once: it does not wait for the
// body that Go's HTTP/2 transport took from GetBody for its own retry and never closed (it
// waited a minute for it and failed, which is what CI saw behind squid on a loaded machine).
// Both of Go's HTTP/2 clients: net/http's own, and x/net's over a net/http transport, which is
// what git-lfs's lfshttp (the agent's transport, internal/gitnet) sets up.
func TestPutXorbAfterGoAway(t *testing.T) {
	clients := map[string]func(s *httptest.Server) *http.Client{
		"net/http": func(s *httptest.Server) *http.Client { return s.Client() },
		"x/net/http2": func(s *httptest.Server) *http.Client {
			tr := &http.Transport{TLSClientConfig: s.Client().Transport.(*http.Transport).TLSClientConfig.Clone()}
			//lint:ignore SA1019 deprecated, and what git-lfs's lfshttp calls: the agent's transport
			if err := http2.ConfigureTransport(tr); err != nil {
				t.Fatal(err)
			}
			return &http.Client{Transport: tr}
		},
	}
	for name, client := range clients {
		t.Run(name, func(t *testing.T) { putXorbAfterGoAway(t, client) })
	}
}

func putXorbAfterGoAway(t *testing.T, client func(*httptest.Server) *http.Client) {
	x := &xorb.Xorb{Hash: hash.Hash{1}, Body: make([]byte, 100<<10)}
	var got atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Store(n)
		io.WriteString(w, `{"was_inserted":true}`)
	}))
	s.EnableHTTP2 = true
	ln := &goawayFirst{Listener: s.Listener, tls: func() *tls.Config { return s.TLS }}
	s.Listener = ln
	s.StartTLS()
	defer ln.wg.Wait()
	defer s.Close()
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: s.URL, HTTPClient: client(s), Retry: retry.Policy{Attempts: 1}})
	ok, err := c.PutXorb(context.Background(), x)
	if err != nil || !ok {
		t.Fatalf("PutXorb after a GOAWAY = %v, %v", ok, err)
	}
	if !ln.sent.Load() {
		t.Fatal("the first connection sent no GOAWAY: the test did not test the retry")
	}
	if got.Load() != int64(x.Size()) {
		t.Fatalf("the server got %d bytes of the body, want %d", got.Load(), x.Size())
	}
}
