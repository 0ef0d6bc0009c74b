package server

import (
	"net/http"
	"strings"
)

// repoNamespace validates a repository path taken from a URL ("org/name", "datasets/org/name") and
// returns it as the store namespace. Segments are [A-Za-z0-9._-]+, not "." or "..", at most 8 of them.
func repoNamespace(p string) (string, bool) {
	if p == "" || len(p) > 512 {
		return "", false
	}
	segs := strings.Split(p, "/")
	if len(segs) > 8 {
		return "", false
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return "", false
		}
		for _, c := range s {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return "", false
			}
		}
	}
	return p, true
}

// principal is who an LFS request acts for.
type principal struct {
	name  string // user name; "" in open mode or for a token
	write bool
}

// authRepo checks the credentials of an LFS or token-route request for repository ns: HTTP Basic
// (a user of the users file allowed on ns), or a bearer token the server issued for ns (the
// Authorization header of basic-transfer actions). It answers 401 (with LFS-Authenticate and
// WWW-Authenticate, so git-lfs asks the credential helper) or 403 itself and returns false then. In
// open mode everything is allowed.
func (s *Server) authRepo(w http.ResponseWriter, r *http.Request, ns string, write bool) (principal, bool) {
	if s.cfg.Hub != nil {
		return s.authHub(w, r, ns, write)
	}
	if s.Open() {
		return principal{write: true}, true
	}
	deny := func(status int, msg string) (principal, bool) {
		if status == http.StatusUnauthorized {
			w.Header().Set("LFS-Authenticate", `Basic realm="xet-server"`)
			w.Header().Set("WWW-Authenticate", `Basic realm="xet-server"`)
		}
		writeLFSError(w, status, msg)
		return principal{}, false
	}
	if tok, ok := bearer(r); ok {
		c, err := s.tokens.Verify(tok)
		if err != nil {
			return deny(http.StatusUnauthorized, err.Error())
		}
		if c.Refresh {
			return deny(http.StatusUnauthorized, "a refresh credential only opens the token route")
		}
		if c.Namespace != ns {
			return deny(http.StatusForbidden, "token is for another repository")
		}
		need := scopeRead
		if write {
			need = scopeWrite
		}
		if !c.Scope.Allows(need) {
			return deny(http.StatusForbidden, "token scope "+string(c.Scope)+" does not allow "+string(need))
		}
		noteUser(r, c.Subject)
		return principal{name: c.Subject, write: c.Scope == scopeWrite}, true
	}
	name, pass, ok := r.BasicAuth()
	if !ok {
		return deny(http.StatusUnauthorized, "credentials required")
	}
	u, ok := s.cfg.Users.Authenticate(name, pass)
	if !ok {
		return deny(http.StatusUnauthorized, "bad user name or password")
	}
	if !u.CanAccess(ns, false) {
		return deny(http.StatusForbidden, "user "+u.Name+" may not access "+ns)
	}
	if write && !u.CanAccess(ns, true) {
		return deny(http.StatusForbidden, "user "+u.Name+" may not write to "+ns)
	}
	noteUser(r, u.Name)
	return principal{name: u.Name, write: u.CanAccess(ns, true)}, true
}
