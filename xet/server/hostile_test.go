package server

import (
	"bufio"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawRequest sends req as written on a fresh connection (the Go client would refuse or clean it)
// and returns the status code of the answer (0: none). A request with a body closes its write side
// after it (a body shorter than its Content-Length then ends); one without keeps it open (a
// half-closed connection cancels the request, which would answer 503 "canceled").
func rawRequest(t *testing.T, addr, req string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(req, "Content-Length:") {
		c.(*net.TCPConn).CloseWrite()
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// Hostile requests get a clear 4xx (or a redirect to the cleaned path), never a 2xx or a 5xx, and
// nothing is written outside the data directory; the health route answers within a second while
// 300 connections hang in the middle of their headers.
func TestHostileRequests(t *testing.T) {
	dataDir := t.TempDir()
	e := newEnv(t, nil)
	addr := strings.TrimPrefix(e.base, "http://")
	h := strings.Repeat("ab", 32)
	tok := "Authorization: Bearer " + e.token("", "team/repo", ScopeWrite, time.Hour) + "\r\n"
	for _, req := range []string{
		"GET /v1/reconstructions/../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n" + tok + "\r\n",
		"GET /v1/reconstructions/%2e%2e%2f%2e%2e%2fetc%2fpasswd HTTP/1.1\r\nHost: x\r\n" + tok + "\r\n",
		"POST /v1/xorbs/default/..%2f..%2f" + h[:58] + " HTTP/1.1\r\nHost: x\r\n" + tok + "Content-Length: 3\r\n\r\nabc",
		"POST /v1/xorbs/..%2fdefault/" + h + " HTTP/1.1\r\nHost: x\r\n" + tok + "Content-Length: 3\r\n\r\nabc",
		"GET /xorbs/default/" + h + "?exp=99999999999&ranges=0-10&sig=AAAA HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /..%2f..%2fetc/info/lfs/objects/" + h + " HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /team%2f..%2f..%2fetc.git/info/lfs/objects/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/vnd.git-lfs+json\r\nContent-Length: 2\r\n\r\n{}",
		"POST /v1/xorbs/default/" + h + " HTTP/1.1\r\nHost: x\r\n" + tok + "Content-Length: 100000\r\n\r\nonly a few bytes",
		"POST /v1/shards HTTP/1.1\r\nHost: x\r\n" + tok + "Content-Length: 99999999999999999999\r\n\r\n",
		"GET /v2/reconstructions/" + h + " HTTP/1.1\r\nHost: x\r\n" + tok + "Range: bytes=10-5\r\n\r\n",
		"GET /v2/reconstructions/" + h + " HTTP/1.1\r\nHost: x\r\n" + tok + "Range: bytes=-0\r\n\r\n",
		"GET /v2/reconstructions/" + h + " HTTP/1.1\r\nHost: x\r\n" + tok + "Range: bytes=99999999999999999999999-\r\n\r\n",
		"GET /v1/chunks/default/" + h + "/../../x HTTP/1.1\r\nHost: x\r\n" + tok + "\r\n",
	} {
		code := rawRequest(t, addr, req)
		line := strings.SplitN(req, "\r\n", 2)[0]
		if code == 0 || (code >= 200 && code < 300) || code >= 500 {
			t.Errorf("%s: answered %d", line, code)
		}
	}
	// Nothing written outside the data directories (the store's, and this test's untouched one).
	filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if p != dataDir {
			t.Errorf("written outside the store: %s", p)
		}
		return nil
	})
	if _, err := os.Stat("/tmp/passwd"); err == nil {
		t.Error("/tmp/passwd exists")
	}

	// 300 connections stuck in their headers; the health route still answers at once.
	for i := range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /v2/reconstructions/%s HTTP/1.1\r\nHost: x\r\nX-Slow: ", h)
	}
	start := time.Now()
	if res := e.do("GET", "/healthz", nil); res.status != 200 || time.Since(start) > time.Second {
		t.Fatalf("health during the abuse: %v after %v", res, time.Since(start))
	}
}
