package server

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
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

// authRepo authenticates an LFS request for repository ns, before anything of its body is read:
// HTTP Basic (a user of the users file allowed on ns), or a bearer token the server issued for ns
// (the Authorization of basic-transfer actions) whose user the users table still allows. write:
// the request writes. It answers 401 (with LFS-Authenticate and WWW-Authenticate, so git-lfs asks
// the credential helper), 403, or 429/503 (logins refused before their password is checked) itself
// and returns false then. In open mode everything is allowed.
func (s *Server) authRepo(w http.ResponseWriter, r *http.Request, ns string, write bool) (principal, bool) {
	if s.cfg.Hub != nil {
		return s.authHub(w, r, ns, write)
	}
	if s.Open() {
		return principal{write: true}, true
	}
	if tok, ok := bearer(r); ok {
		return s.authRepoToken(w, r, ns, tok, write)
	}
	name, pass, ok := r.BasicAuth()
	if !ok {
		return s.lfsDeny(w, http.StatusUnauthorized, "", "credentials required")
	}
	u, ok := s.login(w, r, name, pass)
	if !ok {
		return principal{}, false
	}
	if !u.CanAccess(ns, false) {
		return s.lfsDeny(w, http.StatusForbidden, "", "user "+u.Name+" may not access "+ns)
	}
	if write && !u.CanAccess(ns, true) {
		return s.denyWrite(w, ns, principal{name: u.Name})
	}
	noteUser(r, u.Name)
	return s.userPrincipal(u, ns), true
}

// authRepoToken authenticates an LFS object or verify request by a CAS token of the server's.
func (s *Server) authRepoToken(w http.ResponseWriter, r *http.Request, ns, tok string, write bool) (principal, bool) {
	c, err := s.tokens.Verify(tok)
	if err != nil {
		return s.lfsDeny(w, http.StatusUnauthorized, "", err.Error())
	}
	if c.Refresh {
		return s.lfsDeny(w, http.StatusUnauthorized, "", "a refresh credential only opens the token route")
	}
	if c.Namespace != ns {
		return s.lfsDeny(w, http.StatusForbidden, "", "token is for another repository")
	}
	need := scopeRead
	if write {
		need = scopeWrite
	}
	if !c.Scope.Allows(need) {
		return s.lfsDeny(w, http.StatusForbidden, "", "token scope "+string(c.Scope)+" does not allow "+string(need))
	}
	who, status, msg := s.tokenPrincipal(c, write)
	if status != 0 {
		return s.lfsDeny(w, status, "", msg)
	}
	noteUser(r, c.Subject)
	return who, true
}

// authBatch authenticates a batch request for reading ns, before its body says whether it reads or
// writes. It takes no token the server issued: a batch answer mints tokens, and one minted from a
// CAS token would give it a new life (git-lfs sends action headers only to their hrefs, never to
// the batch route).
func (s *Server) authBatch(w http.ResponseWriter, r *http.Request, ns string) (principal, bool) {
	if tok, ok := bearer(r); ok && !s.Open() {
		if _, err := s.tokens.Verify(tok); err == nil || errors.Is(err, ErrTokenExpired) {
			return s.lfsDeny(w, http.StatusUnauthorized, "", "the batch route takes your credentials, not a token this server issued")
		}
	}
	return s.authRepo(w, r, ns, false)
}

// denyWrite refuses a write to ns by who, who may only read it: 401 for an anonymous reader of a
// public Hub repository (so that the client asks for a credential), else 403.
func (s *Server) denyWrite(w http.ResponseWriter, ns string, who principal) (principal, bool) {
	switch {
	case s.cfg.Hub != nil && who.name == "":
		return s.lfsDeny(w, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
	case s.cfg.Hub != nil:
		return s.lfsDeny(w, http.StatusForbidden, "", "You don't have the rights to write to "+ns+" with this token (read-only token)")
	default:
		return s.lfsDeny(w, http.StatusForbidden, "", "user "+who.name+" may not write to "+ns)
	}
}

// lfsDeny refuses an LFS or token-route request in the server's mode: the Hub's error shape (code:
// its X-Error-Code) in Hub mode, the LFS one otherwise; a 401 carries the Basic challenges git-lfs
// answers with the credential helper.
func (s *Server) lfsDeny(w http.ResponseWriter, status int, code, msg string) (principal, bool) {
	realm := `Basic realm="xet-server"`
	if s.cfg.Hub != nil {
		realm = `Basic realm="Hugging Face"`
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("LFS-Authenticate", realm)
		w.Header().Set("WWW-Authenticate", realm)
	}
	if s.cfg.Hub != nil {
		writeHubError(w, status, code, msg)
	} else {
		writeLFSError(w, status, msg)
	}
	return principal{}, false
}

// login checks a Basic login against the users file (Users.Login), answering a refusal itself:
// 401 for a wrong name or password, 429 with Retry-After for a try refused before its password is
// checked, 503 when no password check could start.
func (s *Server) login(w http.ResponseWriter, r *http.Request, name, pass string) (*User, bool) {
	u, res, wait := s.cfg.Users.Login(r.Context(), name, pass, s.clientAddr(r), s.now())
	switch res {
	case LoginOK:
		return u, true
	case LoginThrottled:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(wait)))
		s.lfsDeny(w, http.StatusTooManyRequests, "", "too many logins for this user from your address: retry in "+strconv.Itoa(retryAfterSeconds(wait))+" s")
	case LoginBusy:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(wait)))
		s.lfsDeny(w, http.StatusServiceUnavailable, "", "too many logins at once: retry in a moment")
	default:
		s.lfsDeny(w, http.StatusUnauthorized, "", "bad user name or password")
	}
	return nil, false
}

// retryAfterSeconds is d as a Retry-After: whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}
