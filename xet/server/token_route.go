package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// handleTokenRoute answers GET /api/{type}s/{repo}/xet-{read|write}-token/{rev} with
// {"accessToken","exp","casUrl"}. It needs LFS credentials (Basic) when auth is on; a write token
// needs a user allowed to write to the repository.
func (s *Server) handleTokenRoute(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/api/")
	typ, rest, _ := strings.Cut(p, "/")
	var prefix string
	switch typ {
	case "models":
	case "datasets", "spaces":
		prefix = typ + "/"
	default:
		writeError(w, http.StatusNotFound, "no such route")
		return
	}
	var scope Scope
	var repo string
	if i := strings.Index(rest, "/xet-read-token/"); i > 0 {
		scope, repo = scopeRead, rest[:i]
	} else if i := strings.Index(rest, "/xet-write-token/"); i > 0 {
		scope, repo = scopeWrite, rest[:i]
	} else {
		writeError(w, http.StatusNotFound, "no such route (want /api/{type}s/{repo}/xet-{read|write}-token/{rev})")
		return
	}
	ns, ok := repoNamespace(prefix + repo)
	if !ok {
		writeError(w, http.StatusNotFound, "bad repository name")
		return
	}
	if s.cfg.Hub != nil {
		s.handleHubTokenRoute(w, r, ns, scope)
		return
	}
	who, ok := s.authTokenRoute(w, r, ns, scope == scopeWrite)
	if !ok {
		return
	}
	s.answerToken(w, r, ns, scope, who, false)
}

// answerToken issues a CAS token for ns and scope to who (expiring no later than the credential
// who came with) and answers {"accessToken","exp","casUrl"}; with hubHeaders the same values go in
// the X-Xet-* response headers too, as the Hub sends them.
func (s *Server) answerToken(w http.ResponseWriter, r *http.Request, ns string, scope Scope, who principal, hubHeaders bool) {
	tok, exp, err := s.mint(Claims{Namespace: ns, Scope: scope}, who, s.cfg.TokenTTL)
	if err != nil {
		s.fail(w, r, "token", err)
		return
	}
	base := s.baseURL(r)
	if hubHeaders {
		w.Header().Set(lfsbatch.HeaderCasURL, base)
		w.Header().Set(lfsbatch.HeaderAccessToken, tok)
		w.Header().Set(lfsbatch.HeaderTokenExpiration, strconv.FormatInt(exp.Unix(), 10))
	}
	writeJSON(w, http.StatusOK, casapi.Token{AccessToken: tok, Exp: exp.Unix(), CasURL: base})
}

// authTokenRoute authenticates the token route: user credentials (HTTP Basic), or the refresh
// credential of a batch answer for this repository with enough scope, whose user the users table
// still allows. A CAS token mints nothing, and what a refresh credential mints expires with it.
func (s *Server) authTokenRoute(w http.ResponseWriter, r *http.Request, ns string, write bool) (principal, bool) {
	tok, isBearer := bearer(r)
	if !isBearer || s.Open() {
		return s.authRepo(w, r, ns, write)
	}
	deny := func(status int, msg string) (principal, bool) {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="xet-server"`)
		}
		writeError(w, status, msg)
		return principal{}, false
	}
	c, err := s.tokens.Verify(tok)
	switch {
	case err != nil:
		return deny(http.StatusUnauthorized, "refresh credential: "+err.Error())
	case !c.Refresh:
		return deny(http.StatusUnauthorized, "the token route needs user credentials (HTTP Basic) or a refresh credential")
	case c.Namespace != ns:
		return deny(http.StatusForbidden, "refresh credential is for another repository")
	case write && c.Scope != scopeWrite:
		return deny(http.StatusForbidden, "refresh credential of scope "+string(c.Scope)+" cannot mint a write token")
	}
	who, status, msg := s.tokenPrincipal(c, write)
	if status != 0 {
		return deny(status, msg)
	}
	noteUser(r, c.Subject)
	return who, true
}
