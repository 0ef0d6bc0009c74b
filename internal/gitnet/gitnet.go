// Package gitnet is the one owner of how the agent and migrate reach a URL over HTTP: the
// transport git-lfs would use for it, built by git-lfs's own lfshttp package from the process's
// config snapshot (internal/gitrepo) and the environment the command hands down. It honours what
// git-lfs honours: http.proxy and http.<url>.proxy over HTTPS_PROXY / HTTP_PROXY (either case),
// then ALL_PROXY, with NO_PROXY; proxy credentials in the proxy URL; CONNECT for https;
// http.sslCAInfo / GIT_SSL_CAINFO, http.sslCAPath / GIT_SSL_CAPATH; http.sslVerify=false /
// GIT_SSL_NO_VERIFY; http.sslCert and http.sslKey; http.extraHeader; http.cookieFile;
// lfs.dialtimeout, lfs.tlstimeout, lfs.keepalive, lfs.activitytimeout (when set: unset, the
// caller's stall timeout alone bounds a silent answer); every http.<url>.* form matched as git
// matches it.
//
// Nothing is read before the first request: a process that sends none runs no git for it.
package gitnet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/git-lfs/git-lfs/v3/config"
	"github.com/git-lfs/git-lfs/v3/creds"
	"github.com/git-lfs/git-lfs/v3/lfshttp"
	"golang.org/x/net/http/httpproxy"
)

// Options are what the command gives: the configuration and where a warning goes.
type Options struct {
	// Config is git-lfs's view of the config snapshot and the environment
	// (gitrepo.Repo.LFSConfiguration), called once, at the first request.
	Config func() *config.Configuration
	// StallTimeout, when positive, bounds the wait for an answer's headers.
	StallTimeout time.Duration
	// Warnings receives the one warning of a process whose TLS certificates are not verified
	// (http.sslVerify=false, GIT_SSL_NO_VERIFY); nil: none is written.
	Warnings io.Writer
}

// Transport is an http.RoundTripper that sends each request as git-lfs would send it to that
// request's URL: a transport per host (proxy, TLS, client certificate, timeouts), the extra headers
// and cookies configured for the URL. Safe for concurrent use.
type Transport struct {
	o Options

	once sync.Once
	lfs  *lfshttp.Client
	uc   *config.URLConfig
	all  func(*url.URL) (*url.URL, error) // ALL_PROXY with NO_PROXY; nil when unset

	mu    sync.Mutex
	hosts map[string]*host

	warnOnce     sync.Once
	proxyWrapped map[string]bool // hosts whose lfshttp transport takes ALL_PROXY already
}

// host is what requests to one host:port share.
type host struct {
	rt  *http.Transport
	jar http.CookieJar
	err error // building it failed (a client certificate that does not load): every request says so
}

// New returns the Transport of o.
func New(o Options) *Transport {
	return &Transport{o: o, hosts: map[string]*host{}, proxyWrapped: map[string]bool{}}
}

// Client is an http.Client over New(o) that follows redirects as git-lfs does (checkRedirect).
func Client(o Options) *http.Client {
	return &http.Client{Transport: New(o), CheckRedirect: checkRedirect}
}

// maxRedirects is net/http's own limit, which a CheckRedirect of one's own must keep.
const maxRedirects = 10

// checkRedirect follows a redirect as git-lfs does: never from https to plain http, and without the
// Authorization and Cookie headers once it leaves the origin (scheme, host and port) of the first
// request. net/http alone drops them only for another host name that is not a subdomain: it would
// send them on to another port of the same host, or to plain http there. The headers that
// configuration gives a URL (http.<url>.extraHeader, cookies) are added by the Transport for the
// URL redirected to.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("refusing a redirect from https to %s (%s): git-lfs refuses it too", req.URL.Scheme, req.URL.Host)
	}
	if !sameOrigin(via[0].URL, req.URL) {
		req.Header.Del("Authorization")
		req.Header.Del("Cookie")
	}
	return nil
}

// sameOrigin compares scheme, host and port, the port defaulted from the scheme.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

func (t *Transport) load() {
	t.once.Do(func() {
		cfg := t.o.Config()
		t.lfs = lfshttp.NewClient(cfg)
		t.uc = t.lfs.URLConfig()
		t.all = allProxy(cfg.Os)
	})
}

// allProxy is curl's (and so git's) last resort, ALL_PROXY, which git-lfs leaves out: used when
// neither http.proxy nor the scheme's variable names a proxy, and NO_PROXY does not exclude the host.
func allProxy(env config.Environment) func(*url.URL) (*url.URL, error) {
	p, _ := env.Get("ALL_PROXY")
	if p == "" {
		p, _ = env.Get("all_proxy")
	}
	if p == "" {
		return nil
	}
	no, _ := env.Get("NO_PROXY")
	if no == "" {
		no, _ = env.Get("no_proxy")
	}
	return (&httpproxy.Config{HTTPProxy: p, HTTPSProxy: p, NoProxy: no}).ProxyFunc()
}

// RoundTrip sends req through its host's transport with the configured headers and cookies.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.load()
	h := t.host(req.URL)
	if h.err != nil {
		closeBody(req)
		return nil, h.err
	}
	out := req.Clone(req.Context()) // its own headers: the caller's request is not changed
	out.Header = t.lfs.ExtraHeadersFor(out)
	if h.jar != nil {
		for _, c := range h.jar.Cookies(req.URL) {
			out.AddCookie(c)
		}
	}
	resp, err := h.rt.RoundTrip(out)
	if err != nil {
		return nil, t.explain(req, h, err)
	}
	if h.jar != nil {
		if rc := resp.Cookies(); len(rc) > 0 {
			h.jar.SetCookies(req.URL, rc)
		}
	}
	return resp, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// host returns the transport of u's host, built on first use.
func (t *Transport) host(u *url.URL) *host {
	key := u.Scheme + "://" + u.Host
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.hosts[key]; h != nil {
		return h
	}
	h := t.build(u)
	t.hosts[key] = h
	return h
}

func (t *Transport) build(u *url.URL) *host {
	// lfshttp keeps one client per host; its transport is what git-lfs sends through, its jar the
	// http.cookieFile of the host.
	c, err := t.lfs.HttpClient(u, creds.NoneAccess)
	if err != nil {
		return &host{err: fmt.Errorf("setting up HTTPS to %s from git config (http.sslCert, http.sslKey): %w", u.Host, err)}
	}
	rt, ok := c.Transport.(*http.Transport)
	if !ok {
		return &host{err: fmt.Errorf("git-lfs built no plain HTTP transport for %s", u.Host)}
	}
	// Changed in place, not cloned: lfshttp's HTTP/2 upgrade is bound to this transport, and no one
	// else uses lfshttp's client of the host.
	if t.o.StallTimeout > 0 {
		rt.ResponseHeaderTimeout = t.o.StallTimeout
	}
	if _, set := t.uc.Get("lfs", u.String(), "activitytimeout"); !set {
		// lfshttp's default cuts any read or write that waits 30 s; unset, how long an answer may
		// stall is the caller's (xet/cas's stall timeout), so connections are dialled plainly.
		rt.DialContext = (&net.Dialer{Timeout: seconds(t.lfs.DialTimeout, 30), KeepAlive: seconds(t.lfs.KeepaliveTimeout, 1800)}).DialContext
	}
	if rt.DialContext != nil {
		rt.DialContext = resetOnClose(rt.DialContext)
	}
	rt.ExpectContinueTimeout = time.Second
	rt.IdleConnTimeout = 60 * time.Second
	if t.all != nil && !t.proxyWrapped[u.Host] {
		t.proxyWrapped[u.Host] = true
		gitLFS := rt.Proxy
		rt.Proxy = func(req *http.Request) (*url.URL, error) {
			p, err := gitLFS(req)
			if p != nil || err != nil {
				return p, err
			}
			return t.all(req.URL)
		}
	}
	if rt.TLSClientConfig != nil && rt.TLSClientConfig.InsecureSkipVerify {
		t.warnInsecure(u.Host)
	}
	return &host{rt: rt, jar: c.Jar}
}

func (t *Transport) warnInsecure(host string) {
	t.warnOnce.Do(func() {
		if t.o.Warnings != nil {
			fmt.Fprintf(t.o.Warnings, "warning: TLS certificates are not verified (http.sslVerify=false or GIT_SSL_NO_VERIFY), first for %s\n", host)
		}
	})
}

// explain names what a failed request needs: the host and the setting of a TLS failure, the proxy
// (without its credentials) of a request sent through one.
func (t *Transport) explain(req *http.Request, h *host, err error) error {
	var proxy *url.URL
	if h.rt.Proxy != nil {
		proxy, _ = h.rt.Proxy(req)
	}
	msg := err.Error()
	if proxy != nil && proxy.User != nil {
		if pw, ok := proxy.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	if hint := tlsHint(err); hint != "" {
		msg = fmt.Sprintf("TLS with %s: %s (%s)", req.URL.Host, msg, hint)
	}
	if proxy != nil {
		msg = fmt.Sprintf("%s (through the proxy %s)", msg, Redact(proxy))
	}
	return &Error{msg: msg, err: err}
}

// tlsHint is the setting that would fix a TLS failure, "" for another failure.
func tlsHint(err error) string {
	var unknown x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	var invalid x509.CertificateInvalidError
	var name x509.HostnameError
	msg := err.Error()
	switch {
	case errors.As(err, &unknown), errors.As(err, &verify), errors.As(err, &invalid):
		return "the server's certificate is not trusted: give its CA's file in http.sslCAInfo (or http.<url>.sslCAInfo, GIT_SSL_CAINFO)"
	case errors.As(err, &name):
		return "the server's certificate is for another name: use the name it was issued for, or give its CA in http.sslCAInfo"
	case strings.Contains(msg, "remote error: tls: certificate required"), strings.Contains(msg, "remote error: tls: bad certificate"),
		strings.Contains(msg, "remote error: tls: unknown certificate authority"):
		// the server's alert: it wants a client certificate, or refused the one sent
		return "the server wants a client certificate it trusts: set http.sslCert and http.sslKey (or http.<url>.sslCert/sslKey)"
	case strings.Contains(msg, "tls: ") && strings.Contains(msg, "certificate"):
		return "set http.sslCAInfo for the server's CA, or http.sslCert and http.sslKey for a client certificate"
	}
	return ""
}

// Error is a failed request, explained; Unwrap gives net/http's error.
type Error struct {
	msg string
	err error
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.err }

// Timeout reports whether the failure was a timeout, as net.Error does.
func (e *Error) Timeout() bool {
	var ne net.Error
	return errors.As(e.err, &ne) && ne.Timeout()
}

// Redact is a proxy URL without its user name and password.
func Redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// seconds is n seconds, def when n is not positive (lfshttp's defaults for its timeouts).
// resetOnClose makes dial's TCP connections reset when they are closed (SO_LINGER 0), not drained:
// the transport closes a connection when its request is cancelled (Ctrl-C, a follower's git-lfs
// gone), and the bytes of an upload still queued in the kernel then go no further. Drained, up to
// the socket's send buffer (megabytes) would still cross a slow link after the agent stopped. A
// connection closed between requests has nothing queued either way.
func resetOnClose(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok && err == nil {
			_ = tc.SetLinger(0)
		}
		return c, err
	}
}

func seconds(n, def int) time.Duration {
	if n < 1 {
		n = def
	}
	return time.Duration(n) * time.Second
}
