package server

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// localHosts guards an open server (no users file, no Hub tokens) against DNS rebinding: a web page
// whose name an attacker points at 127.0.0.1 makes the browser send its requests here, with its own
// name as Host. Such a server answers only requests whose Host is a loopback name or address
// (localhost, *.localhost, 127.0.0.0/8, ::1) or the host of Config.PublicURL, and that no web page
// of another host sent (localOrigin); anything else gets 403 before any route runs. A request on a connection that presented a verified client certificate
// (--tls-client-ca) is authenticated by it and not checked. Servers with credentials do not need
// this: a rebound page does not have them.
func (s *Server) localHosts(next http.Handler) http.Handler {
	public := ""
	if u, err := url.Parse(s.cfg.PublicURL); err == nil && s.cfg.PublicURL != "" {
		public = strings.ToLower(u.Hostname())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Open() || (r.TLS != nil && len(r.TLS.VerifiedChains) > 0) || localHost(r.Host, public) && localOrigin(r, public) {
			next.ServeHTTP(w, r)
			return
		}
		noteRoute(r, "foreign host")
		if localHost(r.Host, public) {
			writeError(w, http.StatusForbidden, "xet-server without users answers no request a web page of another host sends (Origin)")
			return
		}
		writeError(w, http.StatusForbidden, "xet-server without users answers only requests for a loopback name or address "+
			"(localhost, 127.0.0.1, [::1]) or the --public-url's host: this request's Host is neither (a web page reaching the server by DNS rebinding?)")
	})
}

// localOrigin reports whether r came from no web page (no Origin: git-lfs, xet-core, the agent)
// or from one of a loopback name or public: a page on any site may send "simple" POSTs (no
// preflight) to 127.0.0.1 under that name, which the Host check takes, and the browser names the
// page in Origin ("null" for sandboxed and file pages).
func localOrigin(r *http.Request, public string) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && localHost(u.Host, public)
}

// LoopbackHostsOnly holds a listener on a loopback address that takes no credential (the metrics
// listener) to the open server's rule: a request whose Host is not a loopback name or address
// gets 403. DNS rebinding reaches loopback listeners too: a page whose name now resolves to
// 127.0.0.1 would read the listener's answers. A listener on another address is reachable from
// the network anyway and needs no such rule.
func LoopbackHostsOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if localHost(r.Host, "") {
			next.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusForbidden, "this listener answers only requests for a loopback name or address "+
			"(localhost, 127.0.0.1, [::1]): this request's Host is not one (a web page reaching it by DNS rebinding?)")
	})
}

// NoWebPages holds a listener that serves no web page and takes no credential (the metrics
// listener, on any address) to this rule: a request a web page made gets 403. Off loopback the
// Host rule cannot guard such a listener (scrapers name the machine as they like), yet a loopback
// port can lead to it (Docker publishing the container's 0.0.0.0:9100 on the host's 127.0.0.1),
// where a page whose name rebinds to 127.0.0.1 reads what it answers. Browsers mark what a page
// asks: Sec-Fetch-Site other than "none" (which is the address typed or bookmarked by a person)
// and, for cross-origin and sandboxed requests, Origin. Scrapers send neither.
func NoWebPages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site := r.Header.Get("Sec-Fetch-Site")
		if r.Header.Get("Origin") == "" && (site == "" || site == "none") {
			next.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusForbidden, "this listener answers no request a web page makes (Sec-Fetch-Site, Origin): "+
			"open the address yourself, or scrape it")
	})
}

// localHost reports whether the Host header h names this machine's loopback, or public.
func localHost(h, public string) bool {
	name := h
	if host, _, err := net.SplitHostPort(h); err == nil {
		name = host
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if name == "" {
		return false
	}
	if name == public || name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.Unmap().IsLoopback()
}
