package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

var timeNow = time.Now

// TokenURL is the Hub's Xet token route of the repository: write for uploads, read otherwise, for
// revision rev (one path segment: "refs/pr/1" becomes "refs%2Fpr%2F1"; "" is "main").
func (c *Client) TokenURL(write bool, rev string) string {
	kind := "read"
	if write {
		kind = "write"
	}
	if rev == "" {
		rev = "main"
	}
	return c.repo.Base + "/api/" + c.repo.Type + "/" + c.repo.ID + "/xet-" + kind + "-token/" + url.PathEscape(rev)
}

// Token GETs a CAS token from a token route (TokenURL, or the href of a Hub upload action), with
// the user's credential; read routes go anonymous first. sessionID, when known, is sent as
// X-Xet-Session-Id.
func (c *Client) Token(ctx context.Context, route, sessionID string) (casapi.Token, error) {
	var tok casapi.Token
	hdr := map[string]string{"Accept": "application/json"}
	if sessionID != "" {
		hdr[lfsbatch.HeaderSessionID] = sessionID
	}
	anon := strings.Contains(route, "/xet-read-token/")
	resp, err := c.Do(ctx, Request{Method: http.MethodGet, URL: route, Header: hdr, Anonymous: anon})
	if err != nil {
		var he *HTTPError
		if errors.As(err, &he) && he.Status == http.StatusForbidden && !anon {
			return tok, fmt.Errorf("getting a Xet write token for %s: %w; the token needs write access to %s "+
				"(or push to a pull-request ref, refs/pr/N)", c.repo, err, c.repo)
		}
		return tok, fmt.Errorf("getting a Xet token for %s: %w", c.repo, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	if err != nil {
		return tok, fmt.Errorf("GET %s: reading the token: %w", Where(route), err)
	}
	return parseToken(b, Where(route), contentType(resp), true)
}

// maxTokenAnswer bounds what is read of a token route's answer.
const maxTokenAnswer = 1 << 20

// parseToken reads the answer b of the token route at where: a casapi.Token with an access token.
// needCAS: the answer names the CAS the token is for (a Hub route, whose answer is used as it is),
// so its casUrl, an http(s) URL, and its expiry are required too.
func parseToken(b []byte, where, contentType string, needCAS bool) (casapi.Token, error) {
	var tok casapi.Token
	if err := json.Unmarshal(b, &tok); err != nil {
		return tok, fmt.Errorf("GET %s: the answer is not a Xet token (%s): %w", where, contentType, err)
	}
	if tok.AccessToken == "" || needCAS && (tok.CasURL == "" || tok.Exp == 0) {
		return tok, fmt.Errorf("GET %s: the token answer lacks accessToken, exp or casUrl", where)
	}
	if !needCAS {
		return tok, nil
	}
	if u, err := url.Parse(tok.CasURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return tok, fmt.Errorf("GET %s: casUrl %q is not an http(s) URL", where, tok.CasURL)
	}
	return tok, nil
}

// RefreshToken GETs a new CAS token from href, the token route of an LFS server's xet action,
// with the action's own headers (auth: the LFS server's authorization; never the user's
// credential). It makes one attempt and marks failures worth another: the CAS call that needed
// the token retries (see package retry). A refusal of the route's own credential is final. An
// answer whose body sends nothing for stall (zero: retry.DefaultStallTimeout) is abandoned.
func RefreshToken(ctx context.Context, client *http.Client, href string, auth map[string]string, userAgent string, stall time.Duration) (casapi.Token, error) {
	var tok casapi.Token
	if href == "" {
		return tok, fmt.Errorf("the CAS token expired and the LFS server gave no refresh route (empty href); run the command again")
	}
	where := Where(href)
	ctx, cancel := context.WithCancel(ctx) // ended by the answer's Close, or its stall
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, href, nil)
	if err != nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") {
		return tok, fmt.Errorf("token refresh route %s: not an http(s) URL", where)
	}
	for k, v := range auth {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text holds the whole URL
		}
		return tok, retry.Mark(fmt.Errorf("refreshing the CAS token at %s: %w", where, err))
	}
	resp.Body = retry.StallGuard(resp.Body, stall, cancel, "refreshing the CAS token at "+where)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return tok, refreshError(where, resp, auth)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	if err != nil {
		return tok, retry.Mark(fmt.Errorf("refreshing the CAS token at %s: reading the answer: %w", where, err))
	}
	return parseToken(b, where, contentType(resp), false)
}

// refreshError is the error of a refresh route's failed answer: its message (the secrets of auth
// scrubbed from it: a server may echo the request), final when the route refused its own
// credential, retryable when the status says so.
func refreshError(where string, resp *http.Response, auth map[string]string) error {
	e := readErrorScrubbed(http.MethodGet, where, resp, func(s string) string {
		for _, v := range auth {
			s = redact.Secrets(s, v)
		}
		return s
	})
	err := fmt.Errorf("refreshing the CAS token at %s: %s: %s", where, resp.Status, e.Message)
	switch c := retry.Classify(resp.StatusCode); {
	case resp.StatusCode == http.StatusForbidden || c == retry.Refresh:
		// The refresh route's own credential was refused: no new token will come of it.
		return fmt.Errorf("%w (check your credentials for the LFS server)", err)
	case c == retry.Retryable:
		return &retry.Error{Err: err, Wait: retry.ParseRetryAfter(resp.Header.Get("Retry-After"), timeNow())}
	}
	return err
}

func contentType(resp *http.Response) string {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		return "Content-Type " + ct
	}
	return "no Content-Type"
}
