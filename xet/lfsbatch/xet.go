package lfsbatch

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// XetAction is what a xet batch action says about the CAS: its URL, an access token and its expiry,
// the session id, the token refresh route (the action's href) and, for downloads, the Xet file hash.
// A server builds an action from it (Action); a client reads one back (ParseXetAction).
type XetAction struct {
	CasURL    string
	Token     string
	Exp       time.Time // zero: unknown
	SessionID string
	Href      string            // token refresh route
	Auth      map[string]string // the action's other headers (e.g. Authorization), sent on refresh
	XetHash   string            // downloads: the Xet file hash; see File
	// VerifiesSHA256: the server promises to refuse a shard whose files do not hash to the SHA-256
	// it claims (HeaderVerifiesSHA256), so uploads may claim the oid without hashing.
	VerifiesSHA256 bool
	// SHA256Verified, on a download: the server hashed XetHash's file to the oid when it was
	// registered (HeaderSHA256Verified).
	SHA256Verified bool
	// BatchURL names the listing of the batch answer (HeaderBatchURL); "" when the server offers
	// none (the Hub, older servers).
	BatchURL string
}

// Action returns the batch action carrying x: href x.Href, the X-Xet-* headers of the fields that
// are set (the expiry in unix seconds, HeaderVerifiesSHA256 and HeaderSHA256Verified only when
// true) and x.Auth's headers.
// expiresIn is the action's own lifetime in seconds (0: none given).
func (x *XetAction) Action(expiresIn int64) *Action {
	h := make(map[string]string, 7+len(x.Auth))
	for k, v := range x.Auth {
		h[k] = v
	}
	set := func(name, v string) {
		if v != "" {
			h[name] = v
		}
	}
	set(HeaderCasURL, x.CasURL)
	set(HeaderAccessToken, x.Token)
	if !x.Exp.IsZero() {
		h[HeaderTokenExpiration] = strconv.FormatInt(x.Exp.Unix(), 10)
	}
	set(HeaderSessionID, x.SessionID)
	set(HeaderXetHash, x.XetHash)
	set(HeaderBatchURL, x.BatchURL)
	if x.VerifiesSHA256 {
		h[HeaderVerifiesSHA256] = "true"
	}
	if x.SHA256Verified {
		h[HeaderSHA256Verified] = "true"
	}
	return &Action{Href: x.Href, Header: h, ExpiresIn: expiresIn}
}

// ParseXetAction reads the xet action a. Header names match case-insensitively; headers that are
// not X-Xet-* are kept in Auth. A CAS URL is required and must be http(s); a token expiration, when
// present, must be unix seconds; anything but "true" (in any case) for HeaderVerifiesSHA256 or
// HeaderSHA256Verified is false, so a server that does not know the promise is not taken to make
// it. The errors say what the LFS server left out or got wrong, never a header's secret value.
func ParseXetAction(a *Action) (*XetAction, error) {
	if a == nil {
		return nil, errors.New("the LFS server's answer has no action for the xet transfer")
	}
	x := &XetAction{
		CasURL:         Header(a.Header, HeaderCasURL),
		Token:          Header(a.Header, HeaderAccessToken),
		SessionID:      Header(a.Header, HeaderSessionID),
		XetHash:        Header(a.Header, HeaderXetHash),
		BatchURL:       Header(a.Header, HeaderBatchURL),
		VerifiesSHA256: strings.EqualFold(Header(a.Header, HeaderVerifiesSHA256), "true"),
		SHA256Verified: strings.EqualFold(Header(a.Header, HeaderSHA256Verified), "true"),
		Href:           a.Href,
		Auth:           map[string]string{},
	}
	if x.CasURL == "" {
		return nil, fmt.Errorf("the LFS server's action has no %s header: the server chose the \"xet\" transfer but did not say "+
			"where its CAS is; it is not a Xet server (fix the server, or remove lfs.customtransfer.xet.* to use plain LFS)", HeaderCasURL)
	}
	u, err := url.Parse(x.CasURL)
	if err != nil {
		return nil, fmt.Errorf("the LFS server's %s header is not a URL", HeaderCasURL)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		u.User, u.RawQuery, u.Fragment = nil, "", "" // may hold credentials
		return nil, fmt.Errorf("the LFS server's %s header %q is not an http(s) URL", HeaderCasURL, clip(u.String()))
	}
	if s := Header(a.Header, HeaderTokenExpiration); s != "" {
		sec, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("the LFS server's %s header %q is not unix seconds", HeaderTokenExpiration, clip(s))
		}
		x.Exp = time.Unix(sec, 0)
	}
	for k, v := range a.Header {
		if !strings.HasPrefix(strings.ToLower(k), headerPrefix) {
			x.Auth[k] = v
		}
	}
	return x, nil
}

// File returns the Xet file hash a download action names.
func (x *XetAction) File() (hash.Hash, error) {
	if x.XetHash == "" {
		return hash.Hash{}, fmt.Errorf("the LFS server's download action has no %s header (the Xet file hash); it is not a Xet server", HeaderXetHash)
	}
	h, err := hash.Parse(x.XetHash)
	if err != nil {
		return hash.Hash{}, fmt.Errorf("the LFS server's %s header: %w", HeaderXetHash, err)
	}
	return h, nil
}

// Header returns the value of header name in h, matching the name case-insensitively as HTTP does;
// "" when absent. The name spelled exactly wins; among other spellings, the least in byte order.
func Header(h map[string]string, name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	key, v := "", ""
	for k, kv := range h {
		if strings.EqualFold(k, name) && (key == "" || k < key) {
			key, v = k, kv
		}
	}
	return v
}

// clip bounds a header value quoted in an error.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
