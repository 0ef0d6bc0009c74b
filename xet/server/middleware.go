package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// recorder remembers the status and byte count of a response for the access log. It keeps the
// underlying writer reachable (Unwrap) so http.ResponseController can flush, and passes ReadFrom
// through so large copies keep the fast path.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	body   *countingBody // the request's body; nil without one
}

// WriteHeader records the status. A refusal (4xx, 5xx) of a request whose body was not read to its
// end closes the connection after the answer: otherwise net/http would read up to 256 KiB of the
// refused body first, waiting on a client that need never send it.
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	if code >= 400 && r.body != nil && !r.body.eof.Load() {
		r.Header().Set("Connection", "close")
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := r.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{r.ResponseWriter}, src)
	}
	r.bytes += n
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// reqInfo is what handlers learn of a request for its access-log line and metrics: the route
// template of a route the mux does not name (the repository routes) and the user.
type reqInfo struct {
	route string
	user  string
}

type reqInfoKey struct{}

// noteUser records the authenticated user of r for the access log ("" changes nothing).
func noteUser(r *http.Request, name string) {
	if ri, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok && name != "" {
		ri.user = name
	}
}

// noteRoute records the route template of r, for routes the mux matches with one catch-all.
func noteRoute(r *http.Request, route string) {
	if ri, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok {
		ri.route = route
	}
}

// countingBody counts the bytes read of a request body and notes its end.
type countingBody struct {
	io.ReadCloser
	n   int64
	eof atomic.Bool // a handler may read on a goroutine of its own
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	if err == io.EOF {
		c.eof.Store(true)
	}
	return n, err
}

// statusNoAnswer is what the access log and the metrics record for a request that ended with no
// answer written because its context ended first: its client left (over HTTP/2 at once, over
// HTTP/1.1 once its body was read), or a shutdown cut it. No status reached the client; nginx
// logs such a request as 499 too.
const statusNoAnswer = 499

// logged writes one access-log line per request (JSON, as every log line): method, route
// template, path (never the query, which holds URL signatures), status (statusNoAnswer for a
// request that ended unanswered), bytes received and sent, duration, remote address and the
// user's name when the request authenticated one. Headers (Authorization, tokens) are never
// logged. It counts the same in the metrics.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		ri := &reqInfo{}
		body := &countingBody{ReadCloser: r.Body}
		// The mux records the pattern it matched in this request (nothing below copies it). The
		// body is wrapped in the copy only: net/http looks at the original's to decide what to do
		// with what the handler left unread.
		inner := r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, ri))
		if r.Body != nil && r.Body != http.NoBody {
			inner.Body, rec.body = body, body
		}
		next.ServeHTTP(rec, inner)
		status := rec.status
		switch {
		case status == 0 && inner.Context().Err() != nil:
			status = statusNoAnswer
		case status == 0:
			status = http.StatusOK
		}
		route := ri.route
		if route == "" {
			route = inner.Pattern
		}
		if route == "" || route == "/" {
			route = "unmatched"
		}
		d := time.Since(start)
		s.metrics.request(route, r.Method, status, d, body.n, rec.bytes)
		ev := s.log.Info()
		if status >= 500 {
			ev = s.log.Warn()
		}
		ev = ev.Str("method", r.Method).Str("route", route).Str("path", r.URL.Path).Int("status", status).
			Int64("bytes_in", body.n).Int64("bytes", rec.bytes).Dur("duration", d).Str("remote", r.RemoteAddr)
		if ri.user != "" {
			ev = ev.Str("user", ri.user)
		}
		ev.Msg("request")
	})
}

// draining answers every request but the probes 503 with Retry-After while the server drains
// (Drain), and asks the client to close the connection, so that a load balancer's next attempt
// goes to another instance. Requests already in flight are not affected.
func (s *Server) draining(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.drain.Load() && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			noteRoute(r, "draining")
			w.Header().Set("Retry-After", strconv.Itoa(drainRetryAfter))
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusServiceUnavailable, "xet-server is shutting down: retry (another instance, or this one once restarted)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// drainRetryAfter is the Retry-After, in seconds, of a request refused while draining.
const drainRetryAfter = 2

// recovered turns a handler panic into a 500 and a log line instead of a dropped connection (but lets
// http.ErrAbortHandler through: it deliberately cuts a streamed response).
func (s *Server) recovered(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			s.log.Error().Interface("panic", v).Str("method", r.Method).Str("path", r.URL.Path).Msg("handler panic")
			writeError(w, http.StatusInternalServerError, "internal server error")
		}()
		next.ServeHTTP(w, r)
	})
}

// casHandler is a CAS route handler that got the caller's verified token claims.
type casHandler func(w http.ResponseWriter, r *http.Request, c Claims)

// bearer returns the bearer token of r, if any.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:]), true
	}
	return "", false
}

// cas wraps a CAS route with token checks, made before the handler reads anything of the body: 401
// without a valid token (WWW-Authenticate: Bearer) or when the users table no longer lets its user
// in, 403 when its scope, or its user's access in force, does not allow need. In open mode a request without a token is allowed with write
// scope and the default namespace ""; a token that is present must still be valid.
func (s *Server) cas(need Scope, h casHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r)
		if !ok {
			if s.Open() {
				h(w, r, Claims{Scope: scopeWrite})
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="xet-cas"`)
			writeError(w, http.StatusUnauthorized, "missing bearer token")
			return
		}
		c, err := s.tokens.Verify(tok)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="xet-cas", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, err.Error())
			return
		}
		if c.Refresh {
			w.Header().Set("WWW-Authenticate", `Bearer realm="xet-cas", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "a refresh credential is not a CAS token: get one from the token route")
			return
		}
		if !c.Scope.Allows(need) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="xet-cas", error="insufficient_scope", scope="`+string(need)+`"`)
			writeError(w, http.StatusForbidden, "token scope "+string(c.Scope)+" does not allow "+string(need))
			return
		}
		if _, status, msg := s.tokenPrincipal(c, need == scopeWrite); status != 0 {
			challenge := `Bearer realm="xet-cas", error="invalid_token"`
			if status == http.StatusForbidden {
				challenge = `Bearer realm="xet-cas", error="insufficient_scope", scope="` + string(need) + `"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, status, msg)
			return
		}
		noteUser(r, c.Subject)
		h(w, r, c)
	}
}
