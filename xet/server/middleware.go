package server

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// recorder remembers the status and byte count of a response for the access log. It keeps the
// underlying writer reachable (Unwrap) so http.ResponseController can flush, and passes ReadFrom
// through so large copies keep the fast path.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
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

// logged writes one access-log line per request: method, path (never the query, which holds URL
// signatures), status, bytes, duration and remote address. Headers (Authorization, tokens) are never
// logged.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		ev := s.log.Info()
		if status >= 500 {
			ev = s.log.Warn()
		}
		ev.Str("method", r.Method).Str("path", r.URL.Path).Int("status", status).
			Int64("bytes", rec.bytes).Dur("duration", time.Since(start)).
			Str("remote", r.RemoteAddr).Msg("request")
	})
}

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

// cas wraps a CAS route with token checks: 401 without a valid token (WWW-Authenticate: Bearer), 403
// when its scope does not allow need. In open mode a request without a token is allowed with write
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
		h(w, r, c)
	}
}
