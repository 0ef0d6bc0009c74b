// Package chaos is a reverse proxy that injects faults into chosen requests, for tests (in process)
// and for the test/chaos command (a proxy process of its own): an error status (with Retry-After),
// a reset connection, a body cut short under its full Content-Length, a stall, a trickle, a flipped
// byte, a wrong Content-Range, a body of another length than asked.
package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind of fault.
type Kind int

const (
	Status      Kind = iota // answer Code with a {"error": Message} body, without asking the target
	Reset                   // hijack the connection and close it
	Truncate                // pass the answer but cut its body after Offset bytes (connection closed)
	Flip                    // pass the answer with the byte at Offset inverted
	Stall                   // pass the answer's first Offset bytes, then send nothing until the client gives up
	Trickle                 // pass the answer at Rate bytes per second
	WrongRange              // pass the answer with a Content-Range that names other bytes
	OtherLength             // pass the answer's first Offset bytes only, with Content-Length saying so
)

var kindNames = map[string]Kind{"status": Status, "reset": Reset, "truncate": Truncate, "flip": Flip,
	"stall": Stall, "trickle": Trickle, "wrong-range": WrongRange, "other-length": OtherLength}

// UnmarshalJSON reads a kind by name ("status", "reset", "truncate", "flip", "stall", "trickle",
// "wrong-range", "other-length").
func (k *Kind) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	v, ok := kindNames[name]
	if !ok {
		return fmt.Errorf("unknown fault kind %q", name)
	}
	*k = v
	return nil
}

// Rule injects a fault into the next Times requests whose method is Method (any when empty) and
// whose path starts with Prefix.
type Rule struct {
	Method     string `json:"method"`
	Prefix     string `json:"prefix"`
	Times      int    `json:"times"`
	Kind       Kind   `json:"kind"`
	Code       int    `json:"code"`
	Message    string `json:"message"`
	Offset     int64  `json:"offset"`
	Rate       int64  `json:"rate"`        // Trickle: bytes per second
	RetryAfter int    `json:"retry_after"` // Status: a Retry-After header (seconds) when > 0
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
	// Each write goes out as it is made: a trickle or a stall after some bytes reaches the client
	// as one, not held with the headers in the proxy's buffer (which the client saw as headers
	// that never came).
	p.rp.FlushInterval = -1
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
			if rule.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(rule.RetryAfter))
			}
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
	case Trickle:
		resp.Body = &trickleBody{rc: resp.Body, rate: max(rule.Rate, 1)}
	case WrongRange:
		if cr := resp.Header.Get("Content-Range"); cr != "" {
			resp.Header.Set("Content-Range", "bytes 1-"+strconv.FormatInt(resp.ContentLength, 10)+"/*")
		}
	case OtherLength:
		if resp.ContentLength > rule.Offset {
			resp.Body = &cutBody{rc: resp.Body, left: rule.Offset, clean: true}
			resp.ContentLength = rule.Offset
			resp.Header.Set("Content-Length", strconv.FormatInt(rule.Offset, 10))
		}
	}
	return nil
}

// trickleBody passes the body at rate bytes per second.
type trickleBody struct {
	rc   io.ReadCloser
	rate int64
}

func (t *trickleBody) Read(p []byte) (int, error) {
	n := int(min(int64(len(p)), max(t.rate/10, 1)))
	time.Sleep(time.Duration(n) * time.Second / time.Duration(t.rate))
	return t.rc.Read(p[:n])
}

func (t *trickleBody) Close() error { return t.rc.Close() }

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

// cutBody ends after left bytes: with an error, which makes the reverse proxy abort the answer,
// or (clean) with EOF.
type cutBody struct {
	rc    io.ReadCloser
	left  int64
	clean bool
}

func (c *cutBody) Read(b []byte) (int, error) {
	if c.left <= 0 {
		if c.clean {
			return 0, io.EOF
		}
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

// Clear drops every rule.
func (p *Proxy) Clear() {
	p.mu.Lock()
	p.rules = nil
	p.mu.Unlock()
}
