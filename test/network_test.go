package test

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
)

// tlsServerOpts are the variants of xet-server over TLS.
type tlsServerOpts struct {
	host   string // the name in the URLs it hands out (default xet.internal, which only squid resolves)
	listen string // default 127.0.0.1:0
	mtls   bool   // require a client certificate of the private CA
	header string // "Name: value" every request must carry (http.extraHeader)
}

// startTLSServer starts xet-server (open mode) over TLS with the private CA's certificate and
// returns its LFS URL.
func startTLSServer(t *testing.T, p *pki, o tlsServerOpts) string {
	t.Helper()
	if o.host == "" {
		o.host = "xet.internal"
	}
	if o.listen == "" {
		o.listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", o.listen, err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	public := "https://" + net.JoinHostPort(o.host, port)
	xs := startServer(t, "", func(c *server.Config) { c.PublicURL = public })
	h := xs.srv.Config.Handler
	if o.header != "" {
		name, value, _ := strings.Cut(o.header, ":")
		value = strings.TrimSpace(value)
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(name) != value {
				http.Error(w, "missing "+name, http.StatusUnauthorized)
				return
			}
			inner.ServeHTTP(w, r)
		})
	}
	p.serveTLS(t, ln, h, o.mtls)
	return public + "/team/repo.git/info/lfs"
}

// pushClone pushes two LFS files to lfsURL through the agent in batch mode, clones them back and
// checks the clone, counting the transfers the agents logged.
func pushClone(t *testing.T, e *env, lfsURL string) (pushOut string) {
	t.Helper()
	work, remote := batchRepo(t, e, lfsURL)
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(3<<20, 41))
	writeFile(t, filepath.Join(work, "small.bin"), testutil.RandomBytes(100<<10, 42))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	out, err := e.gitErr(work, "push", "origin", "main")
	if err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	if n := len(e.logLines(`"op":"upload"`, `"mode":"batch"`, "transfer complete")); n != 2 {
		t.Fatalf("%d uploads through the xet transfer, want 2\n%s", n, out)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	if n := len(e.logLines(`"op":"download"`, `"mode":"batch"`, "transfer complete")); n != 2 {
		t.Errorf("%d downloads through the xet transfer, want 2", n)
	}
	return out
}

// A user behind a proxy, reaching xet-server over TLS with a private CA, with both given only in git
// config (http.proxy, http.sslCAInfo): the server's name resolves only through squid's hosts_file,
// so every request of git-lfs and of the agent must go through the proxy, trusting that CA.
func TestNetworkProxyAndPrivateCAFromGitConfig(t *testing.T) {
	p := newPKI(t)
	sq := startSquid(t, "", "")
	lfsURL := startTLSServer(t, p, tlsServerOpts{})
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "http.proxy", "http://"+sq.addr)
	e.git("", "config", "--global", "http.sslCAInfo", p.caFile)
	pushClone(t, e, lfsURL)
	if n := sq.requests(t, "xet.internal"); n < 4 {
		t.Errorf("squid saw %d requests to xet.internal, want the batch requests and the agent's", n)
	}
}
