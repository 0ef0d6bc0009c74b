package cas_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// bodyTransport answers every request without a network: answer returns the status and body.
type bodyTransport func(r *http.Request) (int, []byte)

func (f bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	code, body := f(r)
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

func fuzzClient(t bodyTransport) *cas.HTTP {
	return cas.NewHTTP(cas.HTTPOptions{Endpoint: "http://127.0.0.1:1", Token: cas.NewRefreshingToken("t", time.Time{}, nil),
		HTTPClient: &http.Client{Transport: t}, Retry: retry.Policy{Attempts: 1}})
}

// checkPlan: a plan the client accepted holds nothing a download could not at least look at.
func checkPlan(t *testing.T, p *casapi.ReconstructionV2, err error, took time.Duration) {
	t.Helper()
	if took > 2*time.Second {
		t.Fatalf("parsing a small answer took %v", took)
	}
	if err != nil {
		if errors.Is(err, cas.ErrNotFound) {
			t.Fatalf("a 200 answer reported as not found: %v", err)
		}
		return
	}
	if p == nil {
		t.Fatal("no error and no plan")
	}
}

// The seed corpus in testdata/fuzz/ holds answers captured from the Hub.

// FuzzReconstructionV2 feeds hostile bodies to the client as the answer of
// GET /v2/reconstructions/{file}: an error or a plan, never a panic or a hang.
func FuzzReconstructionV2(f *testing.F) {
	f.Add([]byte(`{"offset_into_first_range":0,"terms":[],"xorbs":{}}`))
	f.Add([]byte(`{"offset_into_first_range":18446744073709551615,"terms":[{"hash":"zz","unpacked_length":-1,"range":{"start":5,"end":1}}],"xorbs":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := fuzzClient(func(r *http.Request) (int, []byte) {
			if strings.HasPrefix(r.URL.Path, "/v2/reconstructions/") {
				return 200, body
			}
			return 599, nil
		})
		start := time.Now()
		p, err := c.Reconstruct(context.Background(), fixedHash(1), &casapi.ByteRange{Start: 0, End: 99})
		checkPlan(t, p, err, time.Since(start))
	})
}

// FuzzReconstructionV1 does the same for the v1 answer (the server has no v2 route), which the
// client converts to the v2 shape.
func FuzzReconstructionV1(f *testing.F) {
	f.Add([]byte(`{"offset_into_first_range":0,"terms":[],"fetch_info":{}}`))
	f.Add([]byte(`{"terms":[{"hash":"00","unpacked_length":1,"range":{"start":0,"end":1}}],"fetch_info":{"00":[{"range":{"start":1,"end":0},"url":"","url_range":{"start":9,"end":1}}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := fuzzClient(func(r *http.Request) (int, []byte) {
			switch {
			case strings.HasPrefix(r.URL.Path, "/v2/"):
				return 404, []byte(`{"error":"no v2 here"}`)
			case strings.HasPrefix(r.URL.Path, "/v1/reconstructions/"):
				return 200, body
			}
			return 599, nil
		})
		start := time.Now()
		p, err := c.Reconstruct(context.Background(), fixedHash(2), nil)
		checkPlan(t, p, err, time.Since(start))
	})
}

// FuzzShardFrames feeds hostile NDJSON streams as the answer of POST /v2/shards. The upload
// succeeds only when a line is a "result" frame before any "error" frame; otherwise it fails, and
// never panics or hangs.
func FuzzShardFrames(f *testing.F) {
	f.Add([]byte("{\"type\":\"validating\",\"verified\":1,\"total\":3}\n{\"type\":\"committing\",\"stage\":\"uploading\"}\n{\"type\":\"result\",\"result\":1}\n"))
	f.Add([]byte("{\"type\":\"validating\",\"verified\":0,\"total\":3}\n{\"type\":\"error\",\"message\":\"xorb missing\",\"retryable\":false}\n"))
	f.Add([]byte("{\"type\":\"heartbeat\"}\n\n   \n{\"type\":\"result\",\"result\":0}"))
	f.Add([]byte("{\"type\":\"validating\"}\n{\"type\":\"res"))
	f.Add([]byte("{\"type\":\"error\",\"message\":\"try again\",\"retryable\":true}\n{\"type\":\"result\"}\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := fuzzClient(func(r *http.Request) (int, []byte) {
			if r.URL.Path == "/v2/shards" {
				return 200, body
			}
			return 599, nil
		})
		start := time.Now()
		err := c.PutShard(context.Background(), []byte("shard"))
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("reading %d bytes of frames took %v", len(body), took)
		}
		want := resultBeforeError(body)
		if (err == nil) != want {
			t.Fatalf("PutShard returned %v; a result frame before any error frame: %v", err, want)
		}
	})
}

// resultBeforeError reads body as NDJSON the way the protocol describes it (lines of at most
// casapi.MaxShardFrameLength bytes, blank lines skipped) and reports whether a "result" frame comes
// before any "error" frame and any undecodable line.
func resultBeforeError(body []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, casapi.MaxShardFrameLength)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var fr casapi.ShardFrame
		if json.Unmarshal(line, &fr) != nil {
			return false
		}
		switch fr.Type {
		case "result":
			return true
		case "error":
			return false
		}
	}
	return false
}
