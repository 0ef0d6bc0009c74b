package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/s3test"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// writeCert writes a self-signed certificate for 127.0.0.1 with the given serial and its key to
// cert and key (each through a temp file and a rename, as certificate tools rotate them).
func writeCert(t *testing.T, cert, key string, serial int64) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "xet-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	for path, block := range map[string]*pem.Block{cert: {Type: "CERTIFICATE", Bytes: der}, key: {Type: "EC PRIVATE KEY", Bytes: kb}} {
		if err := os.WriteFile(path+".tmp", pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
}

// tlsClient trusts any certificate (the test checks which one it got) and opens a new connection
// per client.
func tlsClient() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

// serialOf is the serial of the certificate a new connection to addr is shown.
func serialOf(t *testing.T, addr string) int64 {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// Rotating the certificate during a long download does not break it; a new connection sees the
// new certificate, after a file change (polled) and after SIGHUP.
func TestTLSCertificateReload(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, cert, key, 1)
	addr, logs, stop := startServer(t, "--data", filepath.Join(dir, "data"), "--tls-cert", cert, "--tls-key", key, "--tls-reload-interval", "20ms")
	defer stop()
	body := testutil.RandomBytes(8<<20, 36)
	d := sha256.Sum256(body)
	oid := hexOf(d[:])
	req, _ := http.NewRequest("PUT", "https://"+addr+"/org/tls.git/info/lfs/objects/"+oid, strings.NewReader(string(body)))
	res, err := tlsClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("upload: %d", res.StatusCode)
	}
	if s := serialOf(t, addr); s != 1 {
		t.Fatalf("serial %d before the rotation", s)
	}
	res, err = tlsClient().Get("https://" + addr + "/org/tls.git/info/lfs/objects/" + oid)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	buf := make([]byte, 256<<10)
	got := sha256.New()
	n, err := io.ReadFull(res.Body, buf)
	if err != nil {
		t.Fatal(err)
	}
	got.Write(buf[:n])
	writeCert(t, cert, key, 2) // mid-download
	if !testutil.Eventually(10*time.Second, func() bool { return serialOf(t, addr) == 2 }) {
		t.Fatalf("a new connection still sees the old certificate: %s", logs.String())
	}
	if _, err := io.Copy(got, res.Body); err != nil {
		t.Fatalf("the download across the rotation: %v", err)
	}
	if hexOf(got.Sum(nil)) != oid {
		t.Fatal("the download across the rotation differs")
	}
	// SIGHUP reloads at once. A rewrite the poll would also see: the serial says which came first
	// only when the poll is slower, so look right after the signal.
	writeCert(t, cert, key, 3)
	if err := hangUpSelf(); err != nil {
		t.Fatal(err)
	}
	if !testutil.Eventually(5*time.Second, func() bool { return serialOf(t, addr) == 3 }) {
		t.Fatal("SIGHUP did not reload the certificate")
	}
	if !strings.Contains(logs.String(), `"trigger":"file change"`) {
		t.Errorf("no reload logged:\n%s", logs.String())
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}

// A bad certificate at start stops the server with a message naming the files.
func TestTLSBadCertificate(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, []byte("not a certificate"), 0o600)
	os.WriteFile(key, []byte("not a key"), 0o600)
	var stderr strings.Builder
	code := run([]string{"--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--tls-cert", cert, "--tls-key", key}, nil, io.Discard, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), cert) {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// /metrics is served on --metrics-listen only, never on the main port.
func TestMetricsListen(t *testing.T) {
	maddr := servertest.FreeAddr(t)
	addr, _, stop := startServer(t, "--data", t.TempDir(), "--metrics-listen", maddr)
	defer stop()
	if s, _ := servertest.Get(t, "http://"+addr+"/healthz"); s != 200 {
		t.Fatalf("healthz: %d", s)
	}
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == 200 {
		t.Fatal("metrics on the main port")
	}
	if s, _ := servertest.Get(t, "http://"+addr+"/readyz"); s != 200 {
		t.Fatalf("readyz: %d", s)
	}
	res, err = http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `xet_http_requests_total{code="200",method="GET",route="GET /healthz"}`) ||
		!strings.Contains(string(b), "xet_backend_duration_seconds") {
		t.Fatalf("metrics: %d\n%s", res.StatusCode, b)
	}
}

// The metrics listener on a loopback address answers only requests for a loopback name, as an
// open server does: a web page whose name rebinds to 127.0.0.1 cannot read the metrics (before,
// it could). A listener configured elsewhere has no such rule (scrapers name it as they like).
func TestMetricsListenChecksHost(t *testing.T) {
	maddr := servertest.FreeAddr(t)
	_, _, stop := startServer(t, "--data", t.TempDir(), "--metrics-listen", maddr)
	defer stop()
	for host, want := range map[string]int{"rebound.example.com": 403, "localhost": 200, maddr: 200} {
		req, err := http.NewRequest("GET", "http://"+maddr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("metrics for Host %s: %d, want %d", host, res.StatusCode, want)
		}
	}
}

// /readyz fails while the bucket cannot be reached, and recovers with it (a real S3 server,
// versitygw, behind a proxy the test cuts).
func TestReadyzFollowsStorage(t *testing.T) {
	s3 := s3test.Start(t)
	target, err := url.Parse(s3.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			panic(http.ErrAbortHandler) // the connection is cut
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	t.Setenv("AWS_ENDPOINT_URL", proxy.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	addr, _, stop := startServer(t, "--data", t.TempDir(), "--secret-file", secret, "--storage", s3.URL("cas"))
	defer stop()
	ready := func() int {
		code, _ := servertest.Get(t, "http://"+addr+"/readyz")
		return code
	}
	if s := ready(); s != 200 {
		t.Fatalf("readyz with the bucket up: %d", s)
	}
	down.Store(true)
	if s := ready(); s != 503 {
		t.Fatalf("readyz with the bucket cut off: %d", s)
	}
	if s, _ := servertest.Get(t, "http://"+addr+"/healthz"); s != 200 {
		t.Fatalf("healthz with the bucket cut off: %d", s)
	}
	down.Store(false)
	if s := ready(); s != 200 {
		t.Fatalf("readyz with the bucket back: %d", s)
	}
}

// A metrics listener on any address refuses what a web page asks of it. Behind Docker's port
// mapping (`--metrics-listen 0.0.0.0:9100` published on the host's 127.0.0.1, as docs/server.md
// shows) the listener is not on loopback, so the Host rule is off, while a page whose name rebinds
// to 127.0.0.1 reaches it; the browser marks such a request (Sec-Fetch-Site, Origin), a scraper
// and a person typing the address do not or say "none".
func TestMetricsRefuseWebPages(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "xet_http_requests_total 1\n") })
	for _, addr := range []string{"0.0.0.0:9100", "[::]:9100", "127.0.0.1:9100"} {
		h := metricsHandler(addr, metrics)
		for _, c := range []struct {
			host   string
			header map[string]string
			want   int
		}{
			{"127.0.0.1:9100", nil, 200},                                                // Prometheus
			{"localhost:9100", map[string]string{"Sec-Fetch-Site": "none"}, 200},        // typed in a browser
			{"127.0.0.1:9100", map[string]string{"Sec-Fetch-Site": "same-origin"}, 403}, // a page's fetch
			{"localhost:9100", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
			{"localhost:9100", map[string]string{"Origin": "http://evil.example"}, 403},
			{"127.0.0.1:9100", map[string]string{"Origin": "null"}, 403}, // a sandboxed or file page
		} {
			req := httptest.NewRequest("GET", "http://"+c.host+"/metrics", nil)
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Errorf("listener %s, Host %s, %v: %d, want %d", addr, c.host, c.header, rec.Code, c.want)
			}
		}
	}
	// Off loopback the Host rule cannot apply (scrapers name the machine as they like), so the rebound
	// page's own name must pass it: only the browser's marks refuse it.
	h := metricsHandler("0.0.0.0:9100", metrics)
	req := httptest.NewRequest("GET", "http://rebound.example.com:9100/metrics", nil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 403 || strings.Contains(rec.Body.String(), "xet_http") {
		t.Errorf("a rebound page's fetch off loopback: %d %q", rec.Code, rec.Body.String())
	}
}
