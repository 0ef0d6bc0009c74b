// Package hub is the client of the Hugging Face Hub's routes that a Xet agent calls itself in
// standalone mode: the LFS batch API, the Xet token routes,
// bridge URLs (which name the Xet file hash of an object) and plain signed downloads of objects not
// yet in Xet. Credentials come from a credentials.Resolver, asked lazily: downloads and read tokens
// go anonymous first and use the credential after a 401.
//
// Errors name the method, host and path of the request (never the query string, which carries URL
// signatures) and what was wrong; credentials and signed URLs never reach an error or a log.
package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// Client talks to one repository's LFS endpoint on a Hub.
type Client struct {
	*API
	lfs  *url.URL // https://host/[datasets/|spaces/]ns/name.git/info/lfs
	repo Repo
}

// API sends requests to an LFS server (the Hub's, or any other) with the user's credential, asked
// for lazily: a request may go anonymous first and take the credential after a 401. Safe for
// concurrent use.
type API struct {
	// StallTimeout abandons an answer whose body yields no byte for this long, retryably
	// (retry.StallGuard); zero: retry.DefaultStallTimeout. The transport's timeouts end with the
	// headers, and a caller's context may be git-lfs's whole command.
	StallTimeout time.Duration

	creds *credentials.Resolver
	http  *http.Client
	ua    string
	// authed: a request went anonymous and was refused; later ones send the credential at once.
	authed atomic.Bool
}

// NewAPI returns an API authenticating with creds.
func NewAPI(creds *credentials.Resolver, client *http.Client, userAgent string) *API {
	return &API{creds: creds, http: client, ua: userAgent}
}

// Repo is a Hub repository: its type ("models", "datasets", "spaces") and id ("ns/name"), and the
// base URL of the Hub's API.
type Repo struct {
	Base string // scheme://host
	Type string
	ID   string
}

func (r Repo) String() string {
	if r.Type == "models" {
		return r.ID
	}
	return r.Type + "/" + r.ID
}

// ParseLFSURL reads the repository out of an LFS endpoint URL
// (https://host/[datasets/|spaces/]ns/name[.git]/info/lfs).
func ParseLFSURL(lfsURL string) (*url.URL, Repo, error) {
	u, err := url.Parse(lfsURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, Repo{}, fmt.Errorf("LFS endpoint %q is not an http(s) URL", Where(lfsURL))
	}
	p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/info/lfs")
	p = strings.TrimSuffix(strings.TrimPrefix(p, "/"), ".git")
	segs := strings.Split(p, "/")
	r := Repo{Base: u.Scheme + "://" + u.Host, Type: "models"}
	if len(segs) == 3 && (segs[0] == "datasets" || segs[0] == "spaces" || segs[0] == "models") {
		r.Type, segs = segs[0], segs[1:]
	}
	if len(segs) != 2 || segs[0] == "" || segs[1] == "" {
		return nil, Repo{}, fmt.Errorf("LFS endpoint %s does not name a Hub repository ([datasets/|spaces/]namespace/name.git/info/lfs)", Where(lfsURL))
	}
	r.ID = segs[0] + "/" + segs[1]
	if !strings.HasSuffix(u.Path, "/info/lfs") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/info/lfs"
	}
	return u, r, nil
}

// New returns the client of the LFS endpoint lfsURL, authenticating with creds.
func New(lfsURL string, creds *credentials.Resolver, client *http.Client, userAgent string) (*Client, error) {
	u, r, err := ParseLFSURL(lfsURL)
	if err != nil {
		return nil, err
	}
	return &Client{API: NewAPI(creds, client, userAgent), lfs: u, repo: r}, nil
}

// Repo is the repository the client talks to.
func (c *Client) Repo() Repo { return c.repo }

// Where is a URL as errors and logs show it: scheme, host and path, no user info, no query (which
// carries signatures).
func Where(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// HTTPError is a non-2xx answer of the Hub.
type HTTPError struct {
	Method, Where string // Where: scheme://host/path, no query
	Status        int
	Code, Message string // X-Error-Code, and X-Error-Message or the body's error/message
	Source        string // the credential sent, by source ("" for none)
	// Foreign: the URL is not at the LFS endpoint's origin, which alone is sent the user's
	// credential.
	Foreign bool
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.Where, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		msg += " (" + e.Code + ")"
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	switch {
	case e.Status == http.StatusUnauthorized && e.Foreign:
		msg += "; no credential of yours is sent there: it is not the LFS endpoint's host"
	case e.Status == http.StatusUnauthorized && e.Source != "":
		msg += fmt.Sprintf("; the credential from %s was refused: is it a valid token for this host?", e.Source)
	case e.Status == http.StatusUnauthorized:
		msg += "; no credential was sent"
	}
	return msg
}

// Request is one call: anonymous first (Anonymous) or with the credential at once. LFS: the call
// is to an LFS route (batch, objects), which takes the credential as HTTP Basic when it has a user
// name (Credential.ForLFS); token routes take it as Bearer.
type Request struct {
	Method, URL string
	Body        []byte
	Header      map[string]string
	Anonymous   bool
	LFS         bool
}

// Do sends req, adding the credential as the request kind wants, and returns a 2xx response (the
// caller closes its body) or an *HTTPError. A 401 without a credential is tried again with one; a
// 401 with one rejects it (git credential reject). Transport errors, 5xx and 429 are tried again
// under the default retry.Policy (a Retry-After is obeyed); the error returned after the last
// attempt says how many there were, and is no longer retryable.
func (c *API) Do(ctx context.Context, req Request) (*http.Response, error) {
	var resp *http.Response
	err := c.retried(ctx, req, func(r *http.Response) error { resp = r; return nil })
	return resp, err
}

// DoRead is Do for an answer read whole (at most limit bytes): a body cut short (a connection
// reset mid-answer) is tried again like a failed request.
func (c *API) DoRead(ctx context.Context, req Request, limit int64) ([]byte, error) {
	var body []byte
	err := c.retried(ctx, req, func(resp *http.Response) error {
		defer resp.Body.Close()
		var err error
		if body, err = io.ReadAll(io.LimitReader(resp.Body, limit)); err != nil {
			return retry.Mark(fmt.Errorf("%s %s: reading the answer: %w", req.Method, Where(req.URL), err))
		}
		return nil
	})
	return body, err
}

// retried makes attempts of req under the default retry.Policy, handing each 2xx answer to use
// (whose error may be retryable too). What it returns after the last attempt is final: retried
// here already, a caller's own loop must not multiply it.
func (c *API) retried(ctx context.Context, req Request, use func(*http.Response) error) error {
	err := retry.Policy{}.Do(ctx, zerolog.Nop(), req.Method+" "+Where(req.URL), func(ctx context.Context) error {
		resp, err := c.doOnce(ctx, req)
		if err != nil {
			return err
		}
		return use(resp)
	})
	return retry.Final(err)
}

// maxRefills bounds the credentials asked for after a 401 within one request: git-lfs makes three
// attempts with a credential in all.
const maxRefills = 2

// doOnce is one attempt of Do. The credential goes only to the origin it belongs to
// (credentials.Resolver.For): a URL on another host is asked anonymously, and a 401 there is final.
func (c *API) doOnce(ctx context.Context, req Request) (*http.Response, error) {
	var cred credentials.Credential
	asked, ours := false, true
	refills := 0 // credentials asked for after a refusal
	if !req.Anonymous || c.authed.Load() {
		var err error
		if cred, ours, err = c.creds.For(ctx, req.URL); err != nil {
			return nil, err
		}
		asked = true
	}
	for {
		resp, err := c.send(ctx, req, cred)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode/100 == 2 {
			c.creds.Approve(cred)
			return resp, nil
		}
		herr := readHTTPError(req.Method, req.URL, resp, cred)
		if resp.StatusCode == http.StatusUnauthorized {
			c.creds.Challenged(ctx, req.URL, resp.Header) // for the helpers of the next fill, as git-lfs does
		}
		if resp.StatusCode == http.StatusUnauthorized && !asked {
			asked = true
			if cred, ours, err = c.creds.For(ctx, req.URL); err != nil {
				return nil, fmt.Errorf("%w; %w", herr, err)
			}
			if ours {
				c.authed.Store(true)
			}
			if !cred.None() {
				continue
			}
		}
		herr.Foreign = !ours
		if resp.StatusCode == http.StatusUnauthorized && !cred.None() {
			c.creds.Reject(cred)
			if ours && refills < maxRefills {
				// As git-lfs: the sources are asked again for the same request, and a helper whose
				// copy went stale (a rotated token) answers the new one, or git prompts for it. A
				// source with nothing else to give answers the same credential, which ends it.
				next, ok, err := c.creds.For(ctx, req.URL)
				if err != nil {
					return nil, fmt.Errorf("%w; %w", herr, err)
				}
				if ok && !next.None() && next.Authorization != cred.Authorization {
					cred, refills = next, refills+1
					continue
				}
			}
			if ours {
				c.creds.EndExchange()
			}
		}
		if c := retry.Classify(resp.StatusCode); c == retry.Retryable {
			return nil, &retry.Error{Err: herr, Wait: retry.ParseRetryAfter(resp.Header.Get("Retry-After"), timeNow())}
		}
		return nil, herr
	}
}

func (c *API) send(ctx context.Context, req Request, cred credentials.Credential) (*http.Response, error) {
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	ctx, cancel := context.WithCancel(ctx) // ended by the answer's Close, or its stall
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, body)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s %s: %w", req.Method, Where(req.URL), errors.Unwrap(err))
	}
	if hr.URL.Scheme != "http" && hr.URL.Scheme != "https" { // a href a server gave: never file:// and the like
		cancel()
		return nil, fmt.Errorf("%s %s: not an http(s) URL", req.Method, Where(req.URL))
	}
	for k, v := range req.Header {
		hr.Header.Set(k, v)
	}
	hr.Header.Set("User-Agent", c.ua)
	if req.LFS && cred.ForLFS() != "" && hr.Header.Get("Authorization") == "" {
		hr.Header.Set("Authorization", cred.ForLFS())
	} else if hr.Header.Get("Authorization") == "" {
		cred.Set(hr.Header)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		cancel()
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text holds the whole URL, signature included
		}
		return nil, retry.Mark(fmt.Errorf("%s %s: %w", req.Method, Where(req.URL), err))
	}
	resp.Body = retry.StallGuard(resp.Body, c.StallTimeout, cancel, req.Method+" "+Where(req.URL))
	return resp, nil
}

// readHTTPError reads a failed answer: X-Error-Code / X-Error-Message, else the JSON body's
// "error" or "message", else the start of the body; cred, the credential sent, is scrubbed from
// them (a server may echo the request's headers).
func readHTTPError(method, u string, resp *http.Response, cred credentials.Credential) *HTTPError {
	e := readErrorScrubbed(method, u, resp, cred.Scrub)
	e.Source = cred.Source
	return e
}

// readErrorScrubbed is readHTTPError with scrub taking whatever was sent out of what the server
// answered.
func readErrorScrubbed(method, u string, resp *http.Response, scrub func(string) string) *HTTPError {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &HTTPError{Method: method, Where: Where(u), Status: resp.StatusCode,
		Code: resp.Header.Get("X-Error-Code"), Message: resp.Header.Get("X-Error-Message")}
	if e.Message == "" {
		var j struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &j) == nil {
			e.Message = j.Error
			if e.Message == "" {
				e.Message = j.Message
			}
		} else if s := strings.TrimSpace(string(b)); s != "" && !strings.HasPrefix(s, "<") {
			e.Message = s
		}
	}
	e.Code, e.Message = redact.Printable(scrub(e.Code)), redact.Printable(scrub(e.Message))
	if len(e.Message) > 300 {
		e.Message = e.Message[:300] + "..."
	}
	return e
}
