package server

import (
	"net/http"
	"time"
)

// principal is who an LFS or token-route request acts for, and what bounds the tokens minted for it.
type principal struct {
	name  string // user name; "" in open mode, for mTLS alone, or for an anonymous reader in Hub mode
	write bool   // may write to the repository asked for
	cred  string // the Claims.Cred of the tokens minted for it (its password's mark)
	// notAfter is the expiry of the token the request was authenticated by (unix seconds; 0 for a
	// user's own credentials): nothing minted for it may outlive it.
	notAfter int64
}

// mint issues a token of c's namespace, scope and kind for who, living ttl but never past
// who.notAfter: a token minted from a token keeps the first one's expiry, however many times it is
// renewed.
func (s *Server) mint(c Claims, who principal, ttl time.Duration) (string, time.Time, error) {
	exp := s.now().Add(ttl)
	if who.notAfter != 0 && exp.Unix() > who.notAfter {
		exp = time.Unix(who.notAfter, 0)
	}
	c.Exp, c.Subject, c.Cred = exp.Unix(), who.name, who.cred
	tok, err := s.tokens.Issue(c)
	return tok, exp, err
}

// userTable is the users table tokens are checked against: nil in open mode and in Hub mode (whose
// Hub tokens do not change while the server runs).
func (s *Server) userTable() *Users {
	if s.cfg.Hub != nil {
		return nil
	}
	return s.cfg.Users
}

// userPrincipal is the principal of user u of the users file on repository ns.
func (s *Server) userPrincipal(u *User, ns string) principal {
	return principal{name: u.Name, write: u.CanAccess(ns, true), cred: s.tokens.userMark(u)}
}

// tokenPrincipal checks the user of a verified token c against the users table in force and
// returns the principal it acts as. The user must still be listed, with the password the token was
// minted under, and still reach the token's repository (for writing when write): a removal, a
// password change or a downgrade takes effect at the next request of every token. A refusal is
// its status (401 or 403) and message. Without a users table the token stands on its own.
func (s *Server) tokenPrincipal(c Claims, write bool) (principal, int, string) {
	p := principal{name: c.Subject, write: c.Scope == scopeWrite, cred: c.Cred, notAfter: c.Exp}
	users := s.userTable()
	if users == nil {
		return p, 0, ""
	}
	u := users.Lookup(c.Subject)
	switch {
	case u == nil || s.tokens.userMark(u) != c.Cred:
		return principal{}, http.StatusUnauthorized, "the token's user is no longer allowed in with the password it was issued under: log in again"
	case !u.CanAccess(c.Namespace, false):
		return principal{}, http.StatusForbidden, "user " + u.Name + " may no longer access " + c.Namespace
	case write && !u.CanAccess(c.Namespace, true):
		return principal{}, http.StatusForbidden, "user " + u.Name + " may no longer write to " + c.Namespace
	}
	p.write = p.write && u.CanAccess(c.Namespace, true)
	return p, 0, ""
}
