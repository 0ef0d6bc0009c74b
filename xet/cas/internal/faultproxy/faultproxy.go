// Package faultproxy is a reverse proxy for tests that injects faults into chosen requests: an
// error status, a reset connection, a body cut short, a flipped byte.
package faultproxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// Kind of fault.
type Kind int

const (
	Status   Kind = iota // answer Code with a {"error": Message} body, without asking the target
	Reset                // hijack the connection and close it
	Truncate             // pass the answer but cut its body after Offset bytes (connection closed)
	Flip                 // pass the answer with the byte at Offset inverted
	Stall                // pass the answer's first Offset bytes, then send nothing until the client gives up
)

// Rule injects a fault into the next Times requests whose method is Method (any when empty) and
// whose path starts with Prefix.
type Rule struct {
	Method  string
	Prefix  string
	Times   int
	Kind    Kind
	Code    int
	Message string
	Offset  int64
}

// Proxy forwards to a target, applying its rules. Safe for concurrent use.
type Proxy struct {
	rp    *httputil.ReverseProxy
	mu    sync.Mutex
	rules []*Rule
	hits  map[string]int
}

// New returns a proxy in front of target (e.g. an httptest server URL).
func New(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &Proxy{hits: make(map[string]int)}
	p.rp = httputil.NewSingleHostReverseProxy(u)
	p.rp.ModifyResponse = p.modify
	p.rp.ErrorLog = nil
	return p, nil
}

// Add adds a rule.
func (p *Proxy) Add(r Rule) {
	p.mu.Lock()
	p.rules = append(p.rules, &r)
	p.mu.Unlock()
}

// Hits returns how many requests went through with a path starting with prefix.
func (p *Proxy) Hits(prefix string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, v := range p.hits {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

func (p *Proxy) take(r *http.Request) *Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hits[r.Method+" "+r.URL.Path]++
	p.hits[r.URL.Path]++
	for _, rule := range p.rules {
		if rule.Times > 0 && (rule.Method == "" || rule.Method == r.Method) && strings.HasPrefix(r.URL.Path, rule.Prefix) {
			rule.Times--
			c := *rule
			return &c
		}
	}
	return nil
}

type ctxKey struct{}

// ServeHTTP applies the first matching rule, or forwards.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rule := p.take(r)
	if rule != nil {
		switch rule.Kind {
		case Status:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rule.Code)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": rule.Message})
			return
		case Reset:
			if r.Body != nil {
				_, _ = io.Copy(io.Discard, r.Body)
			}
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		r = r.WithContext(contextWith(r, rule))
	}
	p.rp.ServeHTTP(w, r)
}

func (p *Proxy) modify(resp *http.Response) error {
	rule, _ := resp.Request.Context().Value(ctxKey{}).(*Rule)
	if rule == nil {
		return nil
	}
	switch rule.Kind {
	case Truncate:
		resp.Body = &cutBody{rc: resp.Body, left: rule.Offset}
	case Flip:
		resp.Body = &flipBody{rc: resp.Body, at: rule.Offset}
	case Stall:
		resp.Body = &stallBody{rc: resp.Body, left: rule.Offset, done: resp.Request.Context().Done()}
	}
	return nil
}

// stallBody passes left bytes, then blocks until the request ends (the client went away).
type stallBody struct {
	rc   io.ReadCloser
	left int64
	done <-chan struct{}
}

func (s *stallBody) Read(b []byte) (int, error) {
	if s.left <= 0 {
		<-s.done
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(b)) > s.left {
		b = b[:s.left]
	}
	n, err := s.rc.Read(b)
	s.left -= int64(n)
	return n, err
}

func (s *stallBody) Close() error { return s.rc.Close() }

// cutBody ends with an error after left bytes, which makes the reverse proxy abort the answer.
type cutBody struct {
	rc   io.ReadCloser
	left int64
}

func (c *cutBody) Read(b []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.rc.Read(b)
	c.left -= int64(n)
	return n, err
}

func (c *cutBody) Close() error { return c.rc.Close() }

type flipBody struct {
	rc  io.ReadCloser
	pos int64
	at  int64
}

func (f *flipBody) Read(b []byte) (int, error) {
	n, err := f.rc.Read(b)
	if f.at >= f.pos && f.at < f.pos+int64(n) {
		b[f.at-f.pos] ^= 0xFF
	}
	f.pos += int64(n)
	return n, err
}

func (f *flipBody) Close() error { return f.rc.Close() }

func contextWith(r *http.Request, rule *Rule) context.Context {
	return context.WithValue(r.Context(), ctxKey{}, rule)
}
