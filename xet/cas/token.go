package cas

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/lazy"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
)

// TokenSource gives the bearer token for CAS requests.
type TokenSource interface {
	// Token returns the token to send.
	Token(ctx context.Context) (token string, err error)
	// Invalidate drops token, which the server refused (401), and reports whether the next Token
	// call will fetch a new one (false: there is no refresh route, sending again is pointless).
	Invalidate(token string) bool
}

// RefreshEarly is how long before its expiry a token is refreshed.
const RefreshEarly = 30 * time.Second

// RefreshingToken is a TokenSource that refreshes its token RefreshEarly before it expires. One
// refresh runs at a time (internal/lazy): other callers wait for it, or for their own context.
// Safe for concurrent use.
type RefreshingToken struct {
	refresh func(ctx context.Context) (casapi.Token, error)
	now     func() time.Time
	cur     lazy.Value[bearer] // the token in use; dropped when it expires or is refused
}

// bearer is a token and when it expires (zero: unknown, used until the server refuses it).
type bearer struct {
	token string
	exp   time.Time
}

// NewRefreshingToken returns a TokenSource starting with initial (valid until exp; a zero exp means
// unknown: used until the server refuses it) and calling refresh for a new one.
func NewRefreshingToken(initial string, exp time.Time, refresh func(ctx context.Context) (casapi.Token, error)) TokenSource {
	t := &RefreshingToken{refresh: refresh, now: time.Now}
	if initial != "" {
		t.cur.Set(bearer{token: initial, exp: exp})
	}
	return t
}

// fresh reports whether b is valid for at least RefreshEarly.
func (t *RefreshingToken) fresh(b bearer) bool {
	return b.exp.IsZero() || t.now().Add(RefreshEarly).Before(b.exp)
}

// Token returns a token valid for at least RefreshEarly, refreshing when needed. A token the
// refresh route has just given is used as it is, however soon it expires.
func (t *RefreshingToken) Token(ctx context.Context) (string, error) {
	b, err := t.cur.Get(ctx, t.fetch)
	if err == nil && !t.fresh(b) {
		t.cur.Drop(func(c bearer) bool { return c == b })
		b, err = t.cur.Get(ctx, t.fetch)
	}
	if err != nil {
		return "", err
	}
	return b.token, nil
}

// fetch asks the refresh route for a new token.
func (t *RefreshingToken) fetch(ctx context.Context) (bearer, error) {
	if t.refresh == nil {
		return bearer{}, errors.New("cas: access token expired and no refresh route")
	}
	tok, err := t.refresh(ctx)
	if err != nil {
		return bearer{}, fmt.Errorf("cas: refresh access token: %w", err)
	}
	if tok.AccessToken == "" {
		return bearer{}, errors.New("cas: refresh access token: empty token in answer")
	}
	b := bearer{token: tok.AccessToken}
	if tok.Exp > 0 {
		b.exp = time.Unix(tok.Exp, 0)
	}
	return b, nil
}

// Invalidate drops token if it is still the current one (the server answered 401), so that the
// next Token call refreshes; false when there is no refresh route.
func (t *RefreshingToken) Invalidate(token string) bool {
	if t.refresh == nil {
		return false
	}
	t.cur.Drop(func(c bearer) bool { return c.token == token })
	return true
}
