package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/protocol"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// batchAction is what a Hub-style LFS batch action says about the CAS (batch mode): the CAS URL,
// an access token and its expiry, the session id, and the token refresh route (href).
type batchAction struct {
	CasURL    string
	Token     string
	Exp       time.Time // zero: unknown
	SessionID string
	Href      string            // token refresh route
	Auth      map[string]string // the action's other headers (e.g. Authorization), sent on refresh
	XetHash   string            // downloads: the Xet file hash
	// VerifiesSHA256: the server promises to refuse a shard whose files do not hash to the SHA-256
	// it claims (lfsbatch.HeaderVerifiesSHA256), so uploads may claim the oid without hashing.
	VerifiesSHA256 bool
}

// header returns the value of a header in h, matching the name case-insensitively as HTTP does.
func header(h map[string]string, name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// parseBatchAction reads a batch action. The errors say what the LFS server left out.
func parseBatchAction(a *protocol.Action) (*batchAction, error) {
	b := &batchAction{
		CasURL:    header(a.Header, lfsbatch.HeaderCasURL),
		Token:     header(a.Header, lfsbatch.HeaderAccessToken),
		SessionID: header(a.Header, lfsbatch.HeaderSessionID),
		XetHash:   header(a.Header, lfsbatch.HeaderXetHash),
		// Anything but "true" keeps the agent hashing: a server that does not understand the
		// promise must not be taken to make it.
		VerifiesSHA256: strings.EqualFold(header(a.Header, lfsbatch.HeaderVerifiesSHA256), "true"),
		Href:           a.Href,
		Auth:           map[string]string{},
	}
	if b.CasURL == "" {
		return nil, fmt.Errorf("the LFS server's action has no %s header: the server chose the \"xet\" transfer but did not say "+
			"where its CAS is; it is not a Xet server (fix the server, or remove lfs.customtransfer.xet.* to use plain LFS)", lfsbatch.HeaderCasURL)
	}
	u, err := url.Parse(b.CasURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the LFS server's %s header %q is not an http(s) URL", lfsbatch.HeaderCasURL, b.CasURL)
	}
	if s := header(a.Header, lfsbatch.HeaderTokenExpiration); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("the LFS server's %s header %q is not unix seconds", lfsbatch.HeaderTokenExpiration, s)
		}
		b.Exp = time.Unix(sec, 0)
	}
	for k, v := range a.Header {
		if !strings.HasPrefix(strings.ToLower(k), "x-xet-") {
			b.Auth[k] = v
		}
	}
	return b, nil
}

// refresher returns the function that gets a new CAS token from the refresh route: GET href with
// the action's own headers (the LFS server's authorization), answered by casapi.Token. It makes one
// attempt and marks failures worth retrying; the CAS call that needed the token retries (see
// package retry).
func refresher(client *http.Client, href string, auth map[string]string, userAgent string) func(ctx context.Context) (casapi.Token, error) {
	return func(ctx context.Context) (casapi.Token, error) {
		var tok casapi.Token
		if href == "" {
			return tok, fmt.Errorf("the CAS token expired and the LFS server gave no refresh route (empty href); run the command again")
		}
		where := href
		if u, err := url.Parse(href); err == nil {
			u.RawQuery, u.User = "", nil
			where = u.String()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, href, nil)
		if err != nil {
			return tok, fmt.Errorf("token refresh route %q: %w", where, err)
		}
		for k, v := range auth {
			req.Header.Set(k, v)
		}
		req.Header.Set("User-Agent", userAgent)
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return tok, retry.Mark(fmt.Errorf("refreshing the CAS token at %s: %w", where, err))
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return tok, retry.Mark(fmt.Errorf("refreshing the CAS token at %s: reading the answer: %w", where, err))
		}
		if resp.StatusCode != http.StatusOK {
			msg := strings.TrimSpace(string(body))
			var e casapi.Error
			if json.Unmarshal(body, &e) == nil && e.Error != "" {
				msg = e.Error
			}
			if len(msg) > 300 {
				msg = msg[:300] + "..."
			}
			err := fmt.Errorf("refreshing the CAS token at %s: %s: %s", where, resp.Status, msg)
			switch {
			case resp.StatusCode == http.StatusForbidden || retry.Classify(resp.StatusCode) == retry.Refresh:
				// The refresh route's own credential was refused: no new token will come of it.
				return tok, fmt.Errorf("%w (check your credentials for the LFS server)", err)
			case retry.Classify(resp.StatusCode) == retry.Retryable:
				return tok, &retry.Error{Err: err, Wait: retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
			}
			return tok, err
		}
		if err := json.Unmarshal(body, &tok); err != nil {
			return tok, fmt.Errorf("refreshing the CAS token at %s: the answer is not a token: %w", where, err)
		}
		if tok.AccessToken == "" {
			return tok, fmt.Errorf("refreshing the CAS token at %s: the answer has no accessToken", where)
		}
		return tok, nil
	}
}
