package cas

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
// refresh runs at a time; other callers wait for it (or for their context). Safe for concurrent use.
type RefreshingToken struct {
	refresh func(ctx context.Context) (casapi.Token, error)
	now     func() time.Time

	mu    sync.Mutex
	token string
	exp   time.Time
	busy  chan struct{} // non-nil while a refresh runs; closed when it ends
}

// NewRefreshingToken returns a TokenSource starting with initial (valid until exp; a zero exp means
// unknown: used until the server refuses it) and calling refresh for a new one.
func NewRefreshingToken(initial string, exp time.Time, refresh func(ctx context.Context) (casapi.Token, error)) TokenSource {
	return &RefreshingToken{refresh: refresh, now: time.Now, token: initial, exp: exp}
}

func (t *RefreshingToken) valid() bool {
	if t.token == "" {
		return false
	}
	return t.exp.IsZero() || t.now().Add(RefreshEarly).Before(t.exp)
}

// Token returns a token valid for at least RefreshEarly, refreshing when needed.
func (t *RefreshingToken) Token(ctx context.Context) (string, error) {
	for {
		t.mu.Lock()
		if t.valid() {
			tok := t.token
			t.mu.Unlock()
			return tok, nil
		}
		if t.refresh == nil {
			t.mu.Unlock()
			return "", errors.New("cas: access token expired and no refresh route")
		}
		if wait := t.busy; wait != nil {
			t.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		done := make(chan struct{})
		t.busy = done
		t.mu.Unlock()

		tok, err := t.refresh(ctx)
		t.mu.Lock()
		t.busy = nil
		close(done)
		if err != nil {
			t.mu.Unlock()
			return "", fmt.Errorf("cas: refresh access token: %w", err)
		}
		if tok.AccessToken == "" {
			t.mu.Unlock()
			return "", errors.New("cas: refresh access token: empty token in answer")
		}
		t.token = tok.AccessToken
		t.exp = time.Time{}
		if tok.Exp > 0 {
			t.exp = time.Unix(tok.Exp, 0)
		}
		out := t.token
		t.mu.Unlock()
		return out, nil
	}
}

// Invalidate drops token if it is still the current one (the server answered 401), so that the
// next Token call refreshes; false when there is no refresh route.
func (t *RefreshingToken) Invalidate(token string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refresh == nil {
		return false
	}
	if t.token == token {
		t.token = ""
	}
	return true
}
