package cas

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// Limits on what the client reads from a CAS answer.
const (
	MaxReconstructionJSON = 64 << 20 // a reconstruction plan
	MaxDedupeShard        = 64 << 20 // a global-dedupe answer (a shard)
	MaxSmallAnswer        = 1 << 20  // xorb and v1 shard answers, error bodies are cut at 64 KiB
	maxErrorBody          = 64 << 10
)

// HTTPOptions configures an HTTP client. Zero fields take defaults.
type HTTPOptions struct {
	Endpoint   string       // CAS base URL, e.g. https://cas-server.xethub.hf.co
	Token      TokenSource  // bearer token for CAS routes; nil sends none
	SessionID  string       // X-Xet-Session-Id; empty sends none
	UserAgent  string       // default git-xet-transfer/<Version>
	HTTPClient *http.Client // default: direct connections (see newTransport)
	// Retry is the budget of each CAS call but Fetch, which makes one attempt (the download
	// retries ranges; see package retry).
	Retry retry.Policy
	Log   zerolog.Logger
	// StallTimeout abandons an answer whose body yields no byte for this long, or averages under
	// retry.MinRate over as long (retryably); default DefaultStallTimeout.
	StallTimeout time.Duration
}

// HTTP is the Client of a CAS server reached over HTTP. It keeps one connection pool (the
// HTTPClient's Transport), refreshes its bearer token through the TokenSource, retries what is worth
// retrying, and remembers whether the server speaks the v2 routes. Safe for concurrent use.
type HTTP struct {
	o      HTTPOptions
	client *http.Client
	log    zerolog.Logger

	reconVersion atomic.Int32 // 0 unknown, 1 or 2 once the server answered
	shardVersion atomic.Int32
}

// newTransport is the transport NewHTTP uses when it is given no client: direct connections (no
// proxy, the system's CAs), reuse, a bounded idle pool and timeouts. The agent and migrate give
// internal/gitnet's client instead, which sends each request as git-lfs would.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 60 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: DefaultStallTimeout, // an answer that does not start is a stall too
		ExpectContinueTimeout: time.Second,
	}
}

// NewHTTP returns a client of the CAS at o.Endpoint.
func NewHTTP(o HTTPOptions) *HTTP {
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: newTransport()}
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	return &HTTP{o: o, client: o.HTTPClient, log: o.Log}
}

// call is one logical request, sent once per attempt.
type call struct {
	op      string
	method  string
	url     string
	body    []byte           // sent with Content-Length; nil: no body (unless bodyOf)
	bodyOf  func() io.Reader // a fresh reader of a body of bodyLen bytes per attempt (instead of body)
	bodyLen int64
	header  map[string]string // extra headers (Range, Content-Type)
	auth    bool              // send the bearer token and session id
	no429   bool              // do not retry 429 (dedupe queries)
	noRetry func(code int) bool
	once    bool                            // one attempt: the caller retries (Fetch; see package retry)
	beats   bool                            // the answer is heartbeats, few bytes by design: no floor (retry.StreamGuard)
	accept  func(resp *http.Response) error // reads a 2xx answer; body errors must be Retryable
}

// do runs c within the retry budget (retry.Policy.Do): connection and body errors and the statuses
// retry.Classify calls retryable are tried again, honouring Retry-After, unless the route says
// otherwise (no429, noRetry, once). Within an attempt, a 401 makes the token source refresh and the
// request is sent again at once, one time per call.
func (h *HTTP) do(ctx context.Context, c call) error {
	refreshed := false
	if c.once {
		return h.onceRefreshing(ctx, c, &refreshed)
	}
	attempt := func(ctx context.Context) error {
		err := h.onceRefreshing(ctx, c, &refreshed)
		code := StatusCode(err)
		if (c.no429 && code == http.StatusTooManyRequests) || (c.noRetry != nil && c.noRetry(code)) {
			return retry.Final(err)
		}
		if ctx.Err() == nil && retry.IsRetryable(err) {
			concurrency.Report(ctx, code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable)
		}
		return err
	}
	return h.o.Retry.Do(ctx, h.log, "cas: "+c.op, attempt)
}

// onceRefreshing sends c once, and once more at once when the token was refused and refreshed.
func (h *HTTP) onceRefreshing(ctx context.Context, c call, refreshed *bool) error {
	err := h.once(ctx, c, refreshed)
	if errors.Is(err, errRetryNow) {
		err = h.once(ctx, c, refreshed)
	}
	return err
}

// errRetryNow: the token was refused and refreshed; send again at once.
var errRetryNow = errors.New("retry now")

func (h *HTTP) once(ctx context.Context, c call, refreshed *bool) (err error) {
	var token string
	if c.auth && h.o.Token != nil { // before the body is opened: a request not sent holds none
		if token, err = h.o.Token.Token(ctx); err != nil {
			return fmt.Errorf("%s: %w", c.op, err)
		}
	}
	// The request's own context: the stall guard of its answer's body cancels it.
	rctx, cancel := context.WithCancel(ctx)
	req, lb, err := h.newRequest(rctx, c, token)
	if err != nil {
		cancel()
		return err
	}
	if lb != nil {
		// The transport may still hold a request body after Do returns; the caller may reuse
		// the body's memory once we return (see lentBodies).
		defer lb.takeBack()
	}
	resp, err := h.client.Do(req)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return retry.Mark(fmt.Errorf("%s: %w", c.op, withoutQuery(err)))
	}
	guard := retry.StallGuard
	if c.beats {
		guard = retry.StreamGuard
	}
	resp.Body = guard(resp.Body, h.o.StallTimeout, cancel, c.op) // closed by drain or by the taker
	defer func() { drain(resp.Body) }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := statusError(c.op, resp, token)
		h.log.Debug().Str("op", c.op).Int("status", resp.StatusCode).
			Str("request_id", resp.Header.Get(casapi.HeaderRequestID)).Msg("cas: error answer")
		if se.Code == http.StatusUnauthorized && c.auth && !*refreshed && h.o.Token != nil && h.o.Token.Invalidate(token) {
			*refreshed = true
			return errRetryNow
		}
		return se
	}
	if c.accept == nil {
		return nil
	}
	return c.accept(resp)
}

// newRequest is the request of call c under ctx, with token (h.o.Token's). Its body is lent (lb):
// the caller takes it back when the call returns.
func (h *HTTP) newRequest(ctx context.Context, c call, token string) (req *http.Request, lb *lentBodies, err error) {
	var body io.Reader
	bodyOf, bodyLen := c.bodyOf, c.bodyLen
	if bodyOf == nil && len(c.body) > 0 {
		bodyOf, bodyLen = func() io.Reader { return bytes.NewReader(c.body) }, int64(len(c.body))
	}
	switch {
	case bodyOf != nil:
		lb = &lentBodies{reader: bodyOf, size: bodyLen}
		body = lb.open()
	case c.body != nil:
		body = bytes.NewReader(c.body)
	}
	req, err = http.NewRequestWithContext(ctx, c.method, c.url, body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", c.op, err)
	}
	if lb != nil {
		req.GetBody = func() (io.ReadCloser, error) { return lb.open(), nil }
	}
	if bodyOf != nil || c.body != nil {
		req.ContentLength = bodyLen // 0 for an empty, non-nil body
	}
	req.Header.Set("User-Agent", h.o.UserAgent)
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	if c.auth {
		if h.o.Token != nil {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if h.o.SessionID != "" {
			req.Header.Set(lfsbatch.HeaderSessionID, h.o.SessionID)
		}
	}
	return req, lb, nil
}

// lentBodies lends the transport readers of one request body: one per send the transport makes
// (Body, and GetBody for its own retries), which it may go on reading, or never close, after the
// answer (Go's HTTP/2 transport keeps writing after a 2xx answer, drops a body it took from
// GetBody when its retry finds no usable connection, and an HTTP/1.1 write may be blocked on a
// peer that answered early). The caller reuses the body's memory (c.body, a xorb's buffer and
// the file its payloads are lent from) once the call returns, so the call takes every reader back
// (takeBack) before it returns instead of waiting for the transport to close them: each read runs
// under mu, and a read after takeBack gets no byte of the body.
type lentBodies struct {
	reader func() io.Reader // nil once taken back
	size   int64
	mu     sync.Mutex
	back   bool        // taken back: reads end
	all    []*lentBody // lent, to let go of their readers when taken back
}

// errTakenBack: the transport read a request body after its call returned (the answer was in, or
// the call had failed); it gets none of it.
var errTakenBack = errors.New("request body read after its call returned")

type lentBody struct {
	l    *lentBodies
	r    io.Reader
	read int64
}

// Read reads the body under the lender's lock. Taken back, it says EOF to a reader that had
// every byte (the transport's check that nothing follows) and fails otherwise, so that the
// transport ends the request it was still sending (and its connection).
func (b *lentBody) Read(p []byte) (int, error) {
	b.l.mu.Lock()
	defer b.l.mu.Unlock()
	if b.l.back {
		if b.read >= b.l.size {
			return 0, io.EOF
		}
		return 0, errTakenBack
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// WriteTo copies the body through a pooled 1 MiB buffer in large reads (a xorb body reads its
// lent payloads from the file straight into it), each under the lock; the writes, which may block
// on the network, are made without it, from the buffer, which is the transport's to keep no
// longer than Write.
func (b *lentBody) WriteTo(w io.Writer) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	// Wrapped, neither side short-cuts the buffer (w's ReadFrom, b's WriteTo).
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{b}, *bp)
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// Close does nothing: the body is the lender's (takeBack ends it), and the transport may close it
// from any goroutine at any time.
func (b *lentBody) Close() error { return nil }

// open lends a reader of the body (one that reads nothing once taken back).
func (l *lentBodies) open() *lentBody {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := &lentBody{l: l}
	if !l.back {
		b.r = l.reader()
		l.all = append(l.all, b)
	}
	return b
}

// takeBack ends every reader lent, and waits only for a read in progress (a copy into the
// transport's buffer) to end: once it returns, no reader touches the body again, and a reader the
// transport keeps no longer holds the body's memory.
func (l *lentBodies) takeBack() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.back, l.reader = true, nil
	for _, b := range l.all {
		b.r = nil
	}
	l.all = nil
}

// statusError reads the message of an error answer (a casapi.Error body, or its text).
// A server that echoes the request (headers included) in its message must not carry the bearer
// token into errors and logs: every occurrence of token is redacted.
func statusError(op string, resp *http.Response, token string) *StatusError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg := strings.TrimSpace(string(b))
	var e casapi.Error
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if token != "" {
		msg = strings.ReplaceAll(msg, token, "[redacted]")
	}
	if len(msg) > 512 {
		msg = msg[:512] + "..."
	}
	return &StatusError{Op: op, Code: resp.StatusCode, Message: msg,
		Wait: retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
}

// drain reads what is left of a body (a bounded amount) so the connection can be reused, then
// closes it.
func drain(b io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, 256<<10))
	_ = b.Close()
}

// readLimited reads a whole body of at most limit bytes. A broken body is retryable; one over the
// limit is not.
func readLimited(op string, r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, retry.Mark(fmt.Errorf("%s: read answer: %w", op, err))
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: answer larger than %d bytes", op, limit)
	}
	return b, nil
}

// decodeJSON reads a bounded JSON body into v. A body cut short is retryable.
func decodeJSON(op string, r io.Reader, limit int64, v any) error {
	b, err := readLimited(op, r, limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
			// A truncated body parses as a syntax error at its end: worth another try.
			if se != nil && se.Offset >= int64(len(b)) {
				return retry.Mark(fmt.Errorf("%s: truncated JSON answer: %w", op, err))
			}
		}
		return fmt.Errorf("%s: bad JSON answer: %w", op, err)
	}
	return nil
}

// withoutQuery drops the query and user info of the URL that net/http puts in its errors: a
// signed URL's signature, or a token in a query, must not reach errors and logs.
func withoutQuery(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	if u, perr := url.Parse(ue.URL); perr == nil {
		u.RawQuery, u.User, u.Fragment = "", nil, ""
		return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
	}
	return &url.Error{Op: ue.Op, URL: "[unparsable URL]", Err: ue.Err}
}
