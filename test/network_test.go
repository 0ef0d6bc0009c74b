package test

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/s3test"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
)

// tlsServerOpts are the variants of xet-server over TLS.
type tlsServerOpts struct {
	host   string // the name in the URLs it hands out (default xet.internal, which only squid resolves)
	listen string // default 127.0.0.1:0
	mtls   bool   // require a client certificate of the private CA
	header string // "Name: value" every request must carry (http.extraHeader)
	mods   []func(*server.Config)
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
	xs := startServer(t, "", append(o.mods, func(c *server.Config) { c.PublicURL = public })...)
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

// twin is a second user with e's git config and variables but a HOME, caches and log of its own: its
// clone gets every byte from the server, none from e's files.
func (e *env) twin() *env {
	e.t.Helper()
	c := newEnv(e.t)
	cfg, err := os.ReadFile(filepath.Join(e.home, ".gitconfig"))
	if err != nil {
		e.t.Fatal(err)
	}
	writeFile(e.t, filepath.Join(c.home, ".gitconfig"), cfg)
	own := map[string]bool{}
	for _, kv := range c.vars {
		k, _, _ := strings.Cut(kv, "=")
		own[k] = true
	}
	for _, kv := range e.vars {
		if k, _, _ := strings.Cut(kv, "="); !own[k] {
			c.vars = append(c.vars, kv)
		}
	}
	return c
}

// pushClone pushes two LFS files to lfsURL through the agent in batch mode, clones them back as
// another user (e.twin) and checks the clone, counting the transfers the agents logged.
func pushClone(t *testing.T, e *env, lfsURL string) (pushOut string) {
	return pushCloneMode(t, e, lfsURL, "batch")
}

// pushCloneMode is pushClone with the transfers in the agent's mode.
func pushCloneMode(t *testing.T, e *env, lfsURL, mode string) (pushOut string) {
	t.Helper()
	return pushCloneMore(t, e, lfsURL, mode).out
}

// pushed is what pushCloneMore did: the work tree, the push's output, the clone and its user.
type pushed struct {
	work, out, clone string
	c                *env
}

// pushCloneMore is pushCloneMode telling what it did.
func pushCloneMore(t *testing.T, e *env, lfsURL, mode string) pushed {
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
	if n := len(e.logLines(`"op":"upload"`, `"mode":"`+mode+`"`, "transfer complete")); n != 2 {
		t.Fatalf("%d uploads through the xet transfer, want 2\n%s", n, out)
	}
	c := e.twin()
	clone := filepath.Join(c.home, "clone")
	c.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	if n := len(c.logLines(`"op":"download"`, `"mode":"`+mode+`"`, "transfer complete")); n != 2 {
		t.Errorf("%d downloads through the xet transfer, want 2", n)
	}
	return pushed{work: work, out: out, clone: clone, c: c}
}

// A user behind a proxy, reaching xet-server over TLS with a private CA, with both given only in git
// config (http.proxy, http.sslCAInfo): the server's name resolves only through squid's hosts_file,
// so every request of git-lfs and of the agent must go through the proxy, trusting that CA: a push,
// a clone by another user, and that user's pull of a second version.
func TestNetworkProxyAndPrivateCAFromGitConfig(t *testing.T) {
	p := newPKI(t)
	sq := startSquid(t, "", "")
	lfsURL := startTLSServer(t, p, tlsServerOpts{})
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "http.proxy", "http://"+sq.addr)
	e.git("", "config", "--global", "http.sslCAInfo", p.caFile)
	p2 := pushCloneMore(t, e, lfsURL, "batch")
	work, clone, c := p2.work, p2.clone, p2.c
	// v2 pushed from work, pulled into the other user's clone.
	writeFile(t, filepath.Join(work, "small.bin"), testutil.RandomBytes(120<<10, 43))
	e.git(work, "commit", "-q", "-am", "v2")
	e.git(work, "push", "-q", "origin", "main")
	c.git(clone, "pull", "-q", "origin", "main")
	sameTree(t, work, clone)
	if n := sq.requests(t, "xet.internal", 4); n < 4 {
		t.Errorf("squid saw %d requests to xet.internal, want the batch requests and the agent's", n)
	}
}

// A server that wants a client certificate and a header a CI system injects, behind a proxy that
// wants a password: the certificate from http.<url>.sslCert/sslKey, the header from
// http.extraHeader, the proxy's credentials from the http.proxy URL.
func TestNetworkClientCertExtraHeaderProxyAuth(t *testing.T) {
	p := newPKI(t)
	sq := startSquid(t, "alice", "s3cret")
	lfsURL := startTLSServer(t, p, tlsServerOpts{mtls: true, header: "X-CI-Token: tok123"})
	base := strings.TrimSuffix(lfsURL, "/team/repo.git/info/lfs")
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "http.proxy", "http://alice:s3cret@"+sq.addr)
	e.git("", "config", "--global", "http.sslCAInfo", p.caFile)
	e.git("", "config", "--global", "http."+base+"/.sslCert", p.clientCert)
	e.git("", "config", "--global", "http."+base+"/.sslKey", p.clientKey)
	e.git("", "config", "--global", "http.extraHeader", "X-CI-Token: tok123")
	pushClone(t, e, lfsURL)
	if n := sq.requests(t, "xet.internal", 4); n < 4 {
		t.Errorf("squid saw %d requests to xet.internal, want the batch requests and the agent's", n)
	}
}

// http.sslVerify=false: the transfer works without the CA, and the agent says once on its stderr
// (which git-lfs shows with GIT_TRACE=1) that it does not verify certificates.
func TestNetworkSSLVerifyFalse(t *testing.T) {
	p := newPKI(t)
	lfsURL := startTLSServer(t, p, tlsServerOpts{host: "127.0.0.1"})
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "http.sslVerify", "false")
	e.git("", "config", "--global", "lfs.concurrenttransfers", "1")
	e.vars = append(e.vars, "GIT_TRACE=1")
	out := pushClone(t, e, lfsURL)
	if n := strings.Count(out, "TLS certificates are not verified"); n != 1 {
		t.Errorf("push printed the warning %d times, want once:\n%s", n, out)
	}
}

// The proxy given in the environment (HTTPS_PROXY), with NO_PROXY naming the server's address: the
// requests go straight to the server (squid sees none), and a server on the IPv6 loopback works.
func TestNetworkNoProxyAndIPv6(t *testing.T) {
	p := newPKI(t)
	sq := startSquid(t, "", "")
	lfsURL := startTLSServer(t, p, tlsServerOpts{host: "::1", listen: "[::1]:0"})
	e := newEnv(t)
	e.install()
	e.vars = append(e.vars, "HTTPS_PROXY=http://"+sq.addr, "NO_PROXY=::1,localhost", "GIT_SSL_CAINFO="+p.caFile)
	pushClone(t, e, lfsURL)
	if b, _ := os.ReadFile(sq.log); strings.Contains(string(b), "::1") {
		t.Errorf("squid saw requests to the server NO_PROXY excludes:\n%s", b)
	}
}

// xet-server's own binary with --tls-client-ca (mTLS, no users file) over S3 (versitygw), behind
// squid: the agent presents the client certificate of http.sslCert/http.sslKey, and the xorb ranges
// it downloads straight from the bucket with presigned URLs go through the proxy too (the bucket's
// name, s3.internal, resolves only there).
func TestNetworkMTLSServerS3PresignedThroughProxy(t *testing.T) {
	buildServer(t)
	p := newPKI(t)
	sq := startSquid(t, "", "")
	s3 := s3test.Start(t)
	addr := servertest.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	public := "https://xet.internal:" + port
	srv := exec.Command(filepath.Join(binDir, "xet-server"), "--listen", addr, "--data", t.TempDir(),
		"--storage", s3.URL("cas"), "--public-url", public, "--log-level", "warn",
		"--tls-cert", p.serverCert, "--tls-key", p.serverKey, "--tls-client-ca", p.caFile)
	// The bucket is named s3.internal, which only squid resolves: the server reaches it through the
	// proxy too, and the presigned URLs it hands out name that host.
	_, s3Port, _ := net.SplitHostPort(strings.TrimPrefix(s3.Endpoint, "http://"))
	s3Host := "s3.internal:" + s3Port
	srv.Env = append(append(os.Environ(), s3.Env()...), "AWS_ENDPOINT_URL=http://"+s3Host, "HTTP_PROXY=http://"+sq.addr, "NO_PROXY=")
	var log strings.Builder
	srv.Stdout, srv.Stderr = &log, &log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	if !testutil.Eventually(20*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("xet-server did not start\n%s", log.String())
	}
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "http.proxy", "http://"+sq.addr)
	e.git("", "config", "--global", "http.sslCAInfo", p.caFile)
	e.git("", "config", "--global", "http.sslCert", p.clientCert)
	e.git("", "config", "--global", "http.sslKey", p.clientKey)

	// Without the client certificate the server refuses the connection: git-lfs's batch request fails.
	plain := newEnv(t)
	plain.git("", "config", "--global", "http.proxy", "http://"+sq.addr)
	plain.git("", "config", "--global", "http.sslCAInfo", p.caFile)
	resp, err := plain.cmd("", "git", "ls-remote", public+"/team/repo.git").CombinedOutput()
	if err == nil {
		t.Errorf("a connection without a client certificate was served:\n%s", resp)
	}

	pushClone(t, e, public+"/team/repo.git/info/lfs")
	if n := sq.requests(t, "GET http://"+s3Host, 1); n == 0 {
		t.Errorf("no presigned GET to the bucket (%s) went through squid", s3Host)
	}
	if n := sq.requests(t, "xet.internal", 4); n < 4 {
		t.Errorf("squid saw %d requests to xet.internal", n)
	}
}

// The Hub emulator in standalone mode (install --hub) over TLS behind squid: the agent's own calls
// to the Hub's batch and token routes and to the CAS go through the proxy with the private CA.
func TestNetworkHubThroughProxy(t *testing.T) {
	p := newPKI(t)
	sq := startSquid(t, "", "")
	toks, err := server.ParseHubTokens(strings.NewReader(hubWriteToken + ":writer:write\n"))
	if err != nil {
		t.Fatal(err)
	}
	lfsURL := startTLSServer(t, p, tlsServerOpts{mods: []func(*server.Config){func(c *server.Config) {
		c.Hub = &server.HubCompat{Tokens: toks, LegacyDir: t.TempDir()}
	}}})
	hubURL := strings.TrimSuffix(lfsURL, "/team/repo.git/info/lfs")
	e := newEnv(t)
	e.vars = append(e.vars, "HF_ENDPOINT="+hubURL, "HF_TOKEN="+hubWriteToken)
	if out, err := e.cmd("", filepath.Join(binDir, "git-xet-transfer"), "install", "--hub").CombinedOutput(); err != nil {
		t.Fatalf("install --hub: %v\n%s", err, out)
	}
	e.git("", "config", "--global", "http.proxy", "http://"+sq.addr)
	e.git("", "config", "--global", "http.sslCAInfo", p.caFile)
	pushCloneMode(t, e, hubURL+"/org/model.git/info/lfs", "hub")
	if n := sq.requests(t, "xet.internal", 4); n < 4 {
		t.Errorf("squid saw %d requests to xet.internal", n)
	}
}

// migrate from an old LFS server (lfs-test-server) that only squid can reach, to xet-server over
// TLS with the private CA, both given in git config: the objects are read through the proxy.
func TestNetworkMigrateThroughProxy(t *testing.T) {
	p := newPKI(t)
	sq := startSquid(t, "", "")
	lts := startLFSTestServerAs(t, "xet.internal")
	target := startTLSServer(t, p, tlsServerOpts{})
	e := newEnv(t)
	e.git("", "config", "--global", "http.proxy", "http://"+sq.addr)
	e.git("", "config", "--global", "http.sslCAInfo", p.caFile)
	work, _ := legacyHistory(t, e, lts, 2)
	if err := os.RemoveAll(filepath.Join(work, ".git", "lfs", "objects")); err != nil { // only the old server has them
		t.Fatal(err)
	}
	out, code := e.migrate(work, "--to", target)
	if code != 0 {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	if n, all := figure(t, reMigrated, out), figure(t, reObjects, out); n != all || n == 0 {
		t.Errorf("migrated %d of %d objects", n, all)
	}
	if n := sq.requests(t, "GET "+lts.url, 1); n == 0 {
		t.Errorf("no object was read from the old server through squid")
	}
}
