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

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
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
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return tok, fmt.Errorf("GET %s: reading the token: %w", Where(route), err)
	}
	if err := json.Unmarshal(b, &tok); err != nil {
		return tok, fmt.Errorf("GET %s: the answer is not a Xet token (%s): %w", Where(route), contentType(resp), err)
	}
	if tok.AccessToken == "" || tok.CasURL == "" || tok.Exp == 0 {
		return tok, fmt.Errorf("GET %s: the token answer lacks accessToken, exp or casUrl", Where(route))
	}
	if u, err := url.Parse(tok.CasURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return tok, fmt.Errorf("GET %s: casUrl %q is not an http(s) URL", Where(route), tok.CasURL)
	}
	return tok, nil
}

func contentType(resp *http.Response) string {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		return "Content-Type " + ct
	}
	return "no Content-Type"
}
