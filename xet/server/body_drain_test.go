package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// tailBody is a request body that arrives in two reads, the JSON and then its trailing newline (as
// git-lfs's encoder writes it), and records whether it was read to its end.
type tailBody struct {
	parts [][]byte
	ended bool
}

func (b *tailBody) Read(p []byte) (int, error) {
	if len(b.parts) == 0 {
		b.ended = true
		return 0, io.EOF
	}
	n := copy(p, b.parts[0])
	if b.parts[0] = b.parts[0][n:]; len(b.parts[0]) == 0 {
		b.parts = b.parts[1:]
	}
	return n, nil
}

// answerWatch records whether the body had been read to its end when the answer's header went.
type answerWatch struct {
	http.ResponseWriter
	body        *tailBody
	early, seen bool
}

func (w *answerWatch) WriteHeader(code int) {
	if !w.seen {
		w.seen, w.early = true, !w.body.ended
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWatch) Write(p []byte) (int, error) {
	if !w.seen {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// The JSON routes read their whole request body before they answer. A Go reverse proxy in front
// (net/http/httputil, Caddy, Traefik) stops forwarding a request body once the answer's header has
// gone back, and its transport then closes the connection in the middle of the answer: git-lfs saw
// "Unable to parse HTTP response for POST .../objects/batch: unexpected EOF" in test/netbench.sh,
// whose counting proxy is one, when the newline after git-lfs's batch JSON came a moment later.
func TestJSONRoutesReadTheirWholeBodyBeforeAnswering(t *testing.T) {
	e := newEnv(t, nil)
	obj := lfsbatch.Object{OID: strings.Repeat("ab", 32), Size: 10}
	for _, c := range []struct {
		name, path string
		body       []byte
	}{
		{"batch", "/org/repo.git/info/lfs/objects/batch", batchBody("download", []string{"basic"}, obj)},
		{"verify", "/org/repo.git/info/lfs/verify", []byte(`{"oid":"` + obj.OID + `","size":10}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := &tailBody{parts: [][]byte{c.body, []byte("\n")}}
			req := httptest.NewRequest("POST", e.base+c.path, body)
			req.Header.Set("Accept", contentTypeLFS)
			req.Header.Set("Content-Type", contentTypeLFS)
			rec := httptest.NewRecorder()
			w := &answerWatch{ResponseWriter: rec, body: body}
			e.srv.Handler().ServeHTTP(w, req)
			if !w.seen {
				t.Fatalf("no answer (status %d)", rec.Code)
			}
			if w.early {
				t.Fatalf("answered %d before reading the request body to its end", rec.Code)
			}
		})
	}
}
