package test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// pki is a private CA with a server certificate (xet.internal, localhost, 127.0.0.1, ::1) and a
// client certificate it signed, written as PEM files in dir.
type pki struct {
	dir                   string
	caFile                string
	serverCert, serverKey string
	clientCert, clientKey string
	pool                  *x509.CertPool
	server                tls.Certificate
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	caKey := genKey(t)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test private CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(ca)
	p.caFile = p.writePEM(t, "ca.pem", "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string, tls.Certificate) {
		key := genKey(t)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.DNSNames = []string{"xet.internal", "localhost"}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		cf := p.writePEM(t, name+".pem", "CERTIFICATE", der)
		kf := p.writePEM(t, name+".key", "EC PRIVATE KEY", kder)
		c, err := tls.LoadX509KeyPair(cf, kf)
		if err != nil {
			t.Fatal(err)
		}
		return cf, kf, c
	}
	p.serverCert, p.serverKey, p.server = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey, _ = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

func genKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (p *pki) writePEM(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tlsServer serves h over TLS with p's server certificate on a loopback port; mtls requires a
// client certificate p's CA signed. It returns the listening port.
func (p *pki) serveTLS(t *testing.T, ln net.Listener, h http.Handler, mtls bool) {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = ln
	s.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}}
	if mtls {
		s.TLS.ClientCAs = p.pool
		s.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	}
	s.StartTLS()
	t.Cleanup(s.Close)
}

// squid is Debian's squid as a forward proxy on a free loopback port, with its own config: names in
// hosts resolve only through its hosts_file (xet.internal and s3.internal → 127.0.0.1); with user set, it asks for
// that user and password (basic proxy authentication).
type squid struct {
	addr string // host:port
	log  string // access.log
}

// startSquid starts squid; it skips the test where squid is missing, and fails it under CI=true.
func startSquid(t *testing.T, proxyUser, password string) *squid {
	t.Helper()
	bin, err := exec.LookPath("squid")
	if err != nil {
		bin = "/usr/sbin/squid"
		if _, serr := os.Stat(bin); serr != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("squid is not installed (required under CI=true; .ci/run installs it)")
			}
			t.Skip("squid is not installed")
		}
	}
	dir, err := os.MkdirTemp("", "xet-squid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := servertest.FreeAddr(t)
	conf := []string{
		"http_port " + addr,
		"hosts_file " + filepath.Join(dir, "hosts"),
		"dns_nameservers 127.0.0.1", // nothing else resolves: loopback only
		"cache deny all", "cache_mem 8 MB", "shutdown_lifetime 0 seconds", "pinger_enable off",
		"visible_hostname test-proxy", "logfile_rotate 0",
		"pid_filename " + filepath.Join(dir, "squid.pid"),
		"access_log stdio:" + filepath.Join(dir, "access.log"),
		"cache_log " + filepath.Join(dir, "cache.log"),
		"coredump_dir " + dir,
	}
	files := map[string]string{"hosts": "127.0.0.1 xet.internal s3.internal\n"}
	if proxyUser != "" {
		files["auth.sh"] = fmt.Sprintf("#!/bin/sh\nwhile read u p; do if [ \"$u\" = %q ] && [ \"$p\" = %q ]; then echo OK; else echo ERR; fi; done\n", proxyUser, password)
		conf = append(conf, "auth_param basic program "+filepath.Join(dir, "auth.sh"), "auth_param basic children 1",
			"auth_param basic realm test", "acl authed proxy_auth REQUIRED", "http_access deny !authed")
	}
	conf = append(conf, "http_access allow localhost", "http_access deny all")
	if os.Geteuid() == 0 { // squid as root drops to the proxy user, which must reach its files
		conf = append(conf, "cache_effective_user proxy")
	}
	files["squid.conf"] = strings.Join(conf, "\n") + "\n"
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		if u, err := user.Lookup("proxy"); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, uid, gid) })
		}
		os.Chmod(dir, 0o755)
	}
	cmd := exec.Command(bin, "-N", "-f", filepath.Join(dir, "squid.conf"), "-n", "xettest"+addr[strings.LastIndexByte(addr, ':')+1:])
	out, _ := os.Create(filepath.Join(dir, "stderr"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); out.Close() })
	if !testutil.Eventually(20*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		b, _ := os.ReadFile(filepath.Join(dir, "cache.log"))
		s, _ := os.ReadFile(filepath.Join(dir, "stderr"))
		t.Fatalf("squid did not listen on %s:\n%s\n%s", addr, s, b)
	}
	return &squid{addr: addr, log: filepath.Join(dir, "access.log")}
}

// requests counts the access log's lines that name host, waiting up to 5 s for at least want:
// squid writes a line when its request ends, a CONNECT tunnel's when the connection closes, which
// may come just after the command that used it has exited.
func (s *squid) requests(t *testing.T, host string, want int) int {
	t.Helper()
	var n int
	testutil.Eventually(5*time.Second, func() bool {
		b, _ := os.ReadFile(s.log)
		n = strings.Count(string(b), host)
		return n >= want
	})
	return n
}
