package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Scope is what a CAS access token allows: read (reconstructions, dedupe queries, file and xorb
// presence), or write (also xorb and shard uploads). Write includes read.
type Scope string

const (
	scopeRead  Scope = "read"
	scopeWrite Scope = "write"
)

// ScopeRead and ScopeWrite are the two token scopes.
const (
	ScopeRead  = scopeRead
	ScopeWrite = scopeWrite
)

// Allows reports whether a token of scope s may do what need requires.
func (s Scope) Allows(need Scope) bool {
	return s == need || (s == scopeWrite && need == scopeRead)
}

// Claims is what a token carries.
type Claims struct {
	Namespace string `json:"ns"`    // the repository namespace shards are registered under
	Scope     Scope  `json:"scope"` // read or write
	// Exp is the expiry, unix seconds. A token minted from another (a CAS token from a refresh
	// credential) never expires after it: the first expiry holds down the chain (Server.mint).
	Exp int64 `json:"exp"`
	// Subject is the user the token acts for; with a users file, every request the token makes is
	// checked against that user's entry in force (Server.tokenUser).
	Subject string `json:"sub,omitempty"`
	// Cred marks the password the user had when the token was minted (Tokens.userMark): a changed
	// password voids the tokens of the old one.
	Cred string `json:"cred,omitempty"`
	// Refresh marks a refresh credential: accepted only by the token route of its repository (to mint
	// a CAS token of at most its scope that expires no later than itself), never by CAS or LFS
	// routes. It lets an agent keep a long transfer going without user credentials; a CAS token
	// mints nothing.
	Refresh bool `json:"refresh,omitempty"`
}

// Token errors. ErrTokenExpired and ErrTokenInvalid answer 401.
var (
	ErrTokenInvalid = errors.New("invalid access token")
	ErrTokenExpired = errors.New("access token expired")
)

const (
	tokenPrefix = "xet1."
	maxTokenLen = 4096
)

// Tokens issues and verifies CAS access tokens: "xet1." + base64url(JSON claims) + "." +
// base64url(HMAC-SHA256(key, everything before the last dot)). There is no database: a token is valid
// until it expires or the server secret changes. Safe for concurrent use.
type Tokens struct {
	key     []byte
	markKey []byte // keys userMark
	now     func() time.Time
}

// NewTokens returns a Tokens keyed from the server secret (a key of its own, derived so that no token
// signature can be replayed as a URL signature).
func NewTokens(secret []byte, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{key: deriveKey(secret, "git-xet-transfer cas-token v1"),
		markKey: deriveKey(secret, "git-xet-transfer user-mark v1"), now: now}
}

// userMark is what a token carries of its user's password hash (Claims.Cred): keyed, so that it
// tells a token's holder nothing of the hash, and stable across restarts with the same secret.
func (t *Tokens) userMark(u *User) string {
	m := hmac.New(sha256.New, t.markKey)
	m.Write([]byte(u.Name + "\x00" + u.hash))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:12])
}

func deriveKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// Issue returns a token for c (Exp must be set).
func (t *Tokens) Issue(c Claims) (string, error) {
	if c.Scope != scopeRead && c.Scope != scopeWrite {
		return "", fmt.Errorf("issue token: unknown scope %q", c.Scope)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("issue token: %w", err)
	}
	body := tokenPrefix + base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + base64.RawURLEncoding.EncodeToString(t.mac(body)), nil
}

func (t *Tokens) mac(body string) []byte {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// Verify checks tok's signature and expiry and returns its claims.
func (t *Tokens) Verify(tok string) (Claims, error) {
	var c Claims
	if len(tok) > maxTokenLen || !strings.HasPrefix(tok, tokenPrefix) {
		return c, ErrTokenInvalid
	}
	dot := strings.LastIndexByte(tok, '.')
	if dot < len(tokenPrefix) {
		return c, ErrTokenInvalid
	}
	body, sigText := tok[:dot], tok[dot+1:]
	sig, err := base64.RawURLEncoding.Strict().DecodeString(sigText)
	if err != nil || !hmac.Equal(sig, t.mac(body)) {
		return c, ErrTokenInvalid
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(body[len(tokenPrefix):])
	if err != nil {
		return c, ErrTokenInvalid
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, ErrTokenInvalid
	}
	if c.Scope != scopeRead && c.Scope != scopeWrite {
		return c, ErrTokenInvalid
	}
	if t.now().Unix() >= c.Exp {
		return c, ErrTokenExpired
	}
	return c, nil
}
