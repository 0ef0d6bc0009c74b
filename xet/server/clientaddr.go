package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address a request comes from, as the source of a login (logins.go): the peer's
// address, or, when the peer is one of Config.TrustedProxies, the nearest address X-Forwarded-For
// names that is not (each trusted proxy appends the address it got the request from; what a client
// wrote there itself is further left and never reached past an untrusted hop). An IPv6 address
// counts by its /64, what one host is usually given.
func (s *Server) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if s.trustedProxy(ip) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break
			}
			ip = hop.Unmap()
			if !s.trustedProxy(ip) {
				break
			}
		}
	}
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

func (s *Server) trustedProxy(ip netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
