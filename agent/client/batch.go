package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// batchAction is what a Hub-style LFS batch action says about the CAS (batch mode).
type batchAction = lfsbatch.XetAction

// parseBatchAction reads the batch action git-lfs handed over (lfsbatch.ParseXetAction). The errors
// say what the LFS server left out.
func parseBatchAction(a *lfsbatch.Action) (*batchAction, error) {
	return lfsbatch.ParseXetAction(a)
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
		where := redact.URL(href)
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
			for _, v := range auth { // a server that echoes the request keeps the action's credential out of the error
				msg = redact.Secrets(msg, v)
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
