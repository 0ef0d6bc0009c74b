package gitnet

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-lfs/git-lfs/v3/config"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

func client(git, env map[string][]string, warn *bytes.Buffer) *http.Client {
	o := Options{Config: func() *config.Configuration { return config.NewFrom(config.Values{Git: git, Os: env}) }}
	if warn != nil {
		o.Warnings = warn
	}
	return Client(o)
}

// A certificate the client does not trust: the error names the host and http.sslCAInfo.
func TestTLSFailureNamesHostAndSetting(t *testing.T) {
	s := httptest.NewTLSServer(http.NotFoundHandler())
	defer s.Close()
	_, err := client(nil, nil, nil).Get(s.URL + "/x")
	if err == nil {
		t.Fatal("a server signed by an unknown CA was trusted")
	}
	host := strings.TrimPrefix(s.URL, "https://")
	if msg := err.Error(); !strings.Contains(msg, "TLS with "+host) || !strings.Contains(msg, "http.sslCAInfo") {
		t.Errorf("error %q does not name the host and http.sslCAInfo", msg)
	}
}

// http.sslVerify=false: the request is sent, and one warning is written however many hosts follow.
func TestSSLVerifyFalseWarnsOnce(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer s.Close()
	var warn bytes.Buffer
	c := client(map[string][]string{"http.sslverify": {"false"}}, nil, &warn)
	for _, u := range []string{s.URL, strings.Replace(s.URL, "127.0.0.1", "localhost", 1)} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if n := strings.Count(warn.String(), "not verified"); n != 1 {
		t.Errorf("%d warnings, want 1: %q", n, warn.String())
	}
}

// A proxy that cannot be reached: the error names it, without the user or password of its URL.
func TestProxyFailureNamesProxyWithoutCredentials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := client(map[string][]string{"http.proxy": {"http://bob:pa55word@" + addr}}, nil, nil)
	_, err = c.Get("https://xet.internal:1/x")
	if err == nil {
		t.Fatal("a request through a closed proxy succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "proxy http://"+addr) || strings.Contains(msg, "pa55word") || strings.Contains(msg, "bob") {
		t.Errorf("error %q should name the proxy %s without its credentials", msg, addr)
	}
}

// http.extraHeader and http.<url>.extraHeader are sent to the URLs they match, the most specific
// key's values alone where several match (as git-lfs sends them); ALL_PROXY is the last
// resort, after http.proxy and HTTP(S)_PROXY, and NO_PROXY excludes from it.
func TestExtraHeaderAndAllProxy(t *testing.T) {
	var got []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Host+" "+r.Header.Get("X-Ci")+" "+r.Header.Get("X-Only"))
	}))
	defer proxy.Close()
	c := client(map[string][]string{
		"http.extraheader":                    {"X-CI: one"},
		"http.http://a.internal/.extraheader": {"X-Only: a"},
	}, map[string][]string{"ALL_PROXY": {proxy.URL}, "NO_PROXY": {"127.0.0.1"}}, nil)
	for _, u := range []string{"http://a.internal/x", "http://b.internal/y"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []string{"a.internal  a", "b.internal one "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the proxy saw %q, want %q", got, want)
	}
}

// lfs.activitytimeout, when set, ends a request whose answer is silent for longer.
func TestActivityTimeoutWhenSet(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(1500 * time.Millisecond)
	}))
	defer s.Close()
	_, err := client(map[string][]string{"lfs.activitytimeout": {"1"}}, nil, nil).Get(s.URL)
	if err == nil {
		t.Fatal("an answer silent for 1.5 s came through lfs.activitytimeout=1")
	}
	resp, err := client(nil, nil, nil).Get(s.URL)
	if err != nil {
		t.Fatalf("unset, the same answer failed: %v", err)
	}
	resp.Body.Close()
}

// A server that wants a client certificate, asked without one: the error names http.sslCert.
func TestClientCertRequiredNamesSetting(t *testing.T) {
	s := httptest.NewUnstartedServer(http.NotFoundHandler())
	s.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	s.StartTLS()
	defer s.Close()
	_, err := client(map[string][]string{"http.sslverify": {"false"}}, nil, nil).Get(s.URL)
	if err == nil {
		t.Fatal("a server that wants a client certificate answered without one")
	}
	if !strings.Contains(err.Error(), "http.sslCert") {
		t.Errorf("error %q does not name http.sslCert", err)
	}
}

// http.cookieFile: the cookies of a Netscape cookie file (as curl and git read it) are sent to the
// hosts they name, and not to others.
func TestCookieFileSent(t *testing.T) {
	var got []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Cookie("session")
		if c == nil {
			got = append(got, r.Host+" none")
			return
		}
		got = append(got, r.Host+" "+c.Value)
	}))
	defer s.Close()
	file := filepath.Join(t.TempDir(), "cookies.txt")
	line := "127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tabc123\n"
	if err := os.WriteFile(file, []byte("# Netscape HTTP Cookie File\n"+line), 0o600); err != nil {
		t.Fatal(err)
	}
	c := client(map[string][]string{"http.cookiefile": {file}}, nil, nil)
	other := strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
	for _, u := range []string{s.URL + "/x", other + "/y"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	host := strings.TrimPrefix(s.URL, "http://")
	want := []string{host + " abc123", strings.Replace(host, "127.0.0.1", "localhost", 1) + " none"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the server saw %q, want %q", got, want)
	}
}

// http.sslCAPath: every certificate file in the folder is trusted.
func TestSSLCAPathTrusted(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer s.Close()
	dir := t.TempDir()
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "team-ca.pem"), pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := client(nil, nil, nil).Get(s.URL); err == nil {
		t.Fatal("the server's CA was trusted without the setting")
	}
	resp, err := client(map[string][]string{"http.sslcapath": {dir}}, nil, nil).Get(s.URL)
	if err != nil {
		t.Fatalf("with http.sslCAPath = %s: %v", dir, err)
	}
	resp.Body.Close()
}

// lfs.tlstimeout: a server that accepts the connection and never answers the TLS handshake is given
// up on after that many seconds, as a timeout.
func TestTLSTimeoutSetting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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
			defer c.Close() // held open, silent
		}
	}()
	c := client(map[string][]string{"lfs.tlstimeout": {"1"}}, nil, nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.Get("https://" + ln.Addr().String() + "/x")
		done <- err
	}()
	select {
	case err := <-done:
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("silent TLS peer: %v, want a timeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("lfs.tlstimeout=1 did not end a handshake that never came in 30 s")
	}
}

// A proxy that refuses the credentials of the http.proxy URL (407): the error says the proxy wants
// other credentials and names it, without the user or password.
func TestProxyRefusedCredentialsNamed(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Proxy-Authenticate", `Basic realm="corp"`)
		w.WriteHeader(http.StatusProxyAuthRequired)
	}))
	defer proxy.Close()
	addr := strings.TrimPrefix(proxy.URL, "http://")
	c := client(map[string][]string{"http.proxy": {"http://bob:wr0ng@" + addr}}, nil, nil)
	_, err := c.Get("https://xet.internal:1/x")
	if err == nil {
		t.Fatal("a request through a proxy refusing its credentials succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, addr) || !strings.Contains(msg, "407") && !strings.Contains(msg, "Proxy Authentication Required") ||
		strings.Contains(msg, "wr0ng") || strings.Contains(msg, "bob") {
		t.Errorf("error %q should name the proxy %s and its refusal, without the credentials", msg, addr)
	}
}

// Redirects are followed as git-lfs follows them: the Authorization and Cookie headers stay with
// the origin (scheme, host, port) they were set for; net/http alone would send them on to another
// port of the same host, or to plain http there. A redirect from https to http is refused.
func TestRedirectsKeepCredentialsOnTheirOrigin(t *testing.T) {
	got := make(chan string, 4)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path + " " + r.Header.Get("Authorization") + " " + r.Header.Get("Cookie")
	}))
	defer other.Close()
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/landed", http.StatusTemporaryRedirect)
		case "/here":
			http.Redirect(w, r, "/stayed", http.StatusFound)
		default:
			got <- r.URL.Path + " " + r.Header.Get("Authorization") + " " + r.Header.Get("Cookie")
		}
	}))
	defer first.Close()
	c := client(nil, nil, nil)
	for path, want := range map[string]string{"/away": "/landed  ", "/here": "/stayed Bearer secret c=1"} {
		req, _ := http.NewRequest(http.MethodGet, first.URL+path, nil)
		req.Header.Set("Authorization", "Bearer secret")
		req.Header.Set("Cookie", "c=1")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if g := <-got; g != want {
			t.Errorf("%s: the redirected request got %q, want %q", path, g, want)
		}
	}

	tlsFirst := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/downgraded", http.StatusFound)
	}))
	defer tlsFirst.Close()
	c = client(map[string][]string{"http.sslverify": {"false"}}, nil, nil)
	resp, err := c.Get(tlsFirst.URL + "/x?sig=abc")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a redirect from https to http was followed (%s)", <-got)
	}
	if !strings.Contains(err.Error(), "https to http") {
		t.Errorf("error %q does not say why", err)
	}
}

// An upload whose request is cancelled sends nothing more: what it had queued in the kernel is
// dropped with the connection (reset), not sent after the agent gave up on it (on a slow link,
// seconds of bytes after Ctrl-C). The server reads only once the client has cancelled.
func TestCancelledUploadStopsSending(t *testing.T) {
	cancelled := make(chan struct{})
	after := make(chan int64, 1)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-cancelled
		n, _ := io.Copy(io.Discard, r.Body)
		after <- n
	}))
	defer s.Close()
	defer close(after)
	ctx, cancel := context.WithCancel(context.Background())
	var read atomic.Int64
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, &countingReader{io.LimitReader(zeros{}, 256<<20), &read})
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		resp, err := client(nil, nil, nil).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		sent <- err
	}()
	// Until the request's bytes fill the connection's buffers (the server reads none): the client
	// stops reading its body.
	last, since := int64(-1), time.Now()
	if !testutil.Eventually(30*time.Second, func() bool {
		if n := read.Load(); n != last {
			last, since = n, time.Now()
		}
		return last > 1<<20 && time.Since(since) > 100*time.Millisecond
	}) {
		t.Fatal("the upload never filled the connection")
	}
	cancel()
	if err := <-sent; err == nil {
		t.Fatal("the cancelled request succeeded")
	}
	close(cancelled)
	if n := <-after; n > 1<<20 {
		t.Fatalf("the server received %d bytes of an upload after the client cancelled it", n)
	}
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
