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
	ls := &listeners{main: ln, tls: certs != nil,
		hs: &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, TLSConfig: tc}}
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

// shutdown waits until deadline for the main server's requests in flight, then closes what is
// left, and closes the metrics server (whose scrapes are short).
func (ls *listeners) shutdown(deadline time.Time) error {
	if ls.ms != nil {
		defer ls.ms.Close()
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := ls.hs.Shutdown(ctx); err != nil {
		ls.hs.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
