package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
)

// listeners are a run's HTTP servers: the main one (CAS, LFS, web view) and, with
// --metrics-listen, the metrics one.
type listeners struct {
	main    net.Listener
	hs      *http.Server
	tls     bool
	metrics net.Listener // nil: no metrics listener
	ms      *http.Server
	fresh   freshConns // the main server's connections that have sent no request yet
	running *inflight  // the main server's handlers
}

// freshConns are connections in http.StateNew: accepted, no request read yet (nothing sent, a
// TLS handshake, half a header). Shutdown counts one idle only once it is 5 s old and waits for it
// until then, though it holds no request: the server's shutdown closes them (RegisterOnShutdown,
// which runs once the listeners are closed), so SIGTERM ends it within 2 s. One accepted in the
// moment the listener closes reaches track after closeAll: it is closed there.
type freshConns struct {
	mu     sync.Mutex
	m      map[net.Conn]struct{}
	closed bool // closeAll ran: the server is shutting down
}

func (f *freshConns) track(c net.Conn, s http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s == http.StateNew {
		if f.closed {
			c.Close()
			return
		}
		if f.m == nil {
			f.m = map[net.Conn]struct{}{}
		}
		f.m[c] = struct{}{}
		return
	}
	delete(f.m, c)
}

func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for c := range f.m {
		c.Close()
	}
}

// listen binds the main address (TLS from certs when set) and the metrics address, and builds
// their servers; nothing is served until serve.
func listen(f serveFlags, srv *server.Server, m *server.Metrics, certs *certReloader, log zerolog.Logger) (*listeners, error) {
	tc, err := tlsConfig(f.tlsClientCA, certs)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	running, base := newInflight()
	ls := &listeners{main: ln, tls: certs != nil, running: running}
	ls.hs = &http.Server{Handler: running.wrap(srv.Handler()), ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, TLSConfig: tc,
		BaseContext: func(net.Listener) context.Context { return base }}
	ls.hs.ConnState = ls.fresh.track
	ls.hs.RegisterOnShutdown(ls.fresh.closeAll)
	if f.metricsListen == "" || m == nil {
		return ls, nil
	}
	if ls.metrics, err = net.Listen("tcp", f.metricsListen); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	h := metricsHandler(f.metricsListen, m.Handler())
	// A scrape is one short request: a connection idle or slow past these holds a descriptor of the
	// process for nothing (without them, for good).
	ls.ms = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second}
	log.Info().Str("addr", ls.metrics.Addr().String()).Msg("metrics at /metrics")
	return ls, nil
}

// metricsHandler serves metrics at GET /metrics of a listener on addr, with the rules that keep web
// pages from reading it: on every address, no request a page makes (server.NoWebPages: a port
// mapping can bring a listener on another address to loopback); on a loopback address, loopback
// Hosts only too (server.LoopbackHostsOnly), for browsers that do not mark their requests.
func metricsHandler(addr string, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	h := server.NoWebPages(mux)
	if isLoopback(addr) {
		h = server.LoopbackHostsOnly(h) // DNS rebinding reaches loopback too
	}
	return h
}

// serve serves both listeners on goroutines of life, until shutdown. The channel gets the main
// server's failure (a listener that stops accepting).
func (ls *listeners) serve(life *lifetime) <-chan error {
	errc := make(chan error, 1)
	life.Go(func() {
		var err error
		if ls.tls {
			err = ls.hs.ServeTLS(ls.main, "", "")
		} else {
			err = ls.hs.Serve(ls.main)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	})
	if ls.ms != nil {
		life.Go(func() { _ = ls.ms.Serve(ls.metrics) })
	}
	return errc
}

// cutGrace is how long the handlers of the requests a shutdown cuts have to return: their
// connections are closed and their context ended, so what is left is a storage call under way.
const cutGrace = 500 * time.Millisecond

// shutdown waits until deadline for the main server's requests in flight, then cuts those still
// running (an upload on a slow link, a client that stalled: their clients retry) and waits for
// their handlers for cutGrace, and closes the metrics server (whose scrapes are short). cut is
// the number of requests cut; an error means handlers still run, so the store must stay open.
func (ls *listeners) shutdown(deadline time.Time) (cut int, err error) {
	if ls.ms != nil {
		defer ls.ms.Close()
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := ls.hs.Shutdown(ctx); err == nil {
		return 0, nil
	}
	cut = ls.running.running()
	ls.running.cut()
	ls.hs.Close()
	if left := ls.running.wait(time.Now().Add(cutGrace)); left > 0 {
		return cut, fmt.Errorf("shutdown: %d of the %d requests cut at the deadline still run %v later", left, cut, cutGrace)
	}
	return cut, nil
}
