// Command countproxy is a reverse proxy for benchmarks: it forwards everything to one backend and
// counts the body bytes going up (requests) and down (responses). GET /__count on the proxy
// answers "<up> <down>". Loopback only.
//
//	countproxy -listen 127.0.0.1:9000 -backend http://127.0.0.1:8080
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync/atomic"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
)

type counter struct {
	r io.ReadCloser
	n *atomic.Int64
}

func (c counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
func (c counter) Close() error { return c.r.Close() }

type countingTransport struct{ up, down *atomic.Int64 }

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body = counter{req.Body, t.up}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = counter{resp.Body, t.down}
	return resp, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	backend := flag.String("backend", "", "backend base URL")
	flag.Parse()
	u, err := url.Parse(*backend)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "countproxy: give -backend http://HOST:PORT")
		os.Exit(2)
	}
	var up, down atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = countingTransport{&up, &down}
	mux := http.NewServeMux()
	mux.HandleFunc("/__count", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d %d\n", up.Load(), down.Load())
	})
	// Full duplex (servertest.FullDuplex says why): otherwise an answer is cut now and then.
	mux.Handle("/", servertest.FullDuplex(rp))
	log.Fatal(http.ListenAndServe(*listen, mux))
}
