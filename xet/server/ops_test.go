package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// opsEnv is a server with metrics over a store that reports to them, users alice (write), and
// mod's changes.
func opsEnv(t *testing.T, mod func(*Config)) (*env, *Metrics) {
	m := NewMetrics()
	e := newEnv(t, func(c *Config) {
		st, err := store.Open(t.TempDir(), store.Options{Observe: m.Observer()})
		if err != nil {
			t.Fatal(err)
		}
		c.Store, c.Ingest, c.Metrics = st, &UploadIngester{Store: st, Policy: xorb.PolicyAuto}, m
		c.Users = mustUsers(t, servertest.UserLine("alice", alicePW, ""))
		c.Now = nil // real time: tokens must outlive the pushes
		if mod != nil {
			mod(c)
		}
	})
	e.st = e.srv.cfg.Store.(*store.Store)
	return e, m
}

// push uploads data to repo as the agent does (batch, then the xet client with global dedupe) and
// returns the upload's error; a refused batch is returned as its status and message.
func (e *env) push(t *testing.T, repo string, data []byte) error {
	t.Helper()
	sum := sha256.Sum256(data)
	obj := lfsbatch.Object{OID: hex.EncodeToString(sum[:]), Size: int64(len(data))}
	r, br := e.batch(repo, batchBody("upload", []string{"xet"}, obj), servertest.Basic("alice", alicePW)...)
	if r.status != 200 {
		return errors.New(string(r.body))
	}
	up := br.Objects[0].Actions["upload"]
	if up == nil {
		return nil // already stored
	}
	sess := upload.NewSession(upload.Config{CAS: casClient(t, up, "alice", alicePW), GlobalDedupe: true})
	defer sess.Close()
	if _, err := sess.Upload(t.Context(), bytes.NewReader(data), &sum, nil); err != nil {
		return err
	}
	return sess.Finish(t.Context())
}

// scrape parses the metrics with Prometheus's own text parser.
func scrape(t *testing.T, m *Metrics) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("metrics do not parse: %v\n%s", err, text)
	}
	return fams, text
}

// metric adds the values of a family's series (counters, gauges; histograms: their counts).
func metric(fams map[string]*dto.MetricFamily, name string) float64 {
	var v float64
	for _, m := range fams[name].GetMetric() {
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Histogram != nil:
			v += float64(m.Histogram.GetSampleCount())
		}
	}
	return v
}

// After a push of a known size the metrics count at least its xorbs' bytes received; a second push
// of the same file (to another repository: the first already has it) adds its bytes to the
// deduplicated bytes; no series carries a token, a signature or a user.
func TestMetricsCountPushes(t *testing.T) {
	e, m := opsEnv(t, nil)
	data := vectors.SplitMix(2_000_000, 36)
	if err := e.push(t, "org/a", data); err != nil {
		t.Fatal(err)
	}
	fams, _ := scrape(t, m)
	xorbBytes := metric(fams, "xet_xorb_bytes_stored_total")
	if metric(fams, "xet_xorbs_stored_total") < 1 || xorbBytes < float64(len(data))/2 {
		t.Fatalf("xorbs stored: %v, %v bytes", metric(fams, "xet_xorbs_stored_total"), xorbBytes)
	}
	if got := metric(fams, "xet_received_bytes_total"); got < xorbBytes {
		t.Fatalf("received %v bytes, below the xorbs' %v", got, xorbBytes)
	}
	if metric(fams, "xet_shards_stored_total") != 1 || metric(fams, "xet_deduplicated_bytes_total") != 0 {
		t.Fatalf("after one push: shards %v, deduplicated %v", metric(fams, "xet_shards_stored_total"), metric(fams, "xet_deduplicated_bytes_total"))
	}
	if err := e.push(t, "org/b", data); err != nil {
		t.Fatal(err)
	}
	fams, _ = scrape(t, m)
	if got := metric(fams, "xet_deduplicated_bytes_total"); got < float64(len(data))*0.9 {
		t.Fatalf("a second push of the same file deduplicated %v of %d bytes", got, len(data))
	}
	if metric(fams, "xet_global_dedupe_queries_total") < 1 || metric(fams, "xet_global_dedupe_hits_total") < 1 {
		t.Fatalf("global dedupe: %v queries, %v hits", metric(fams, "xet_global_dedupe_queries_total"), metric(fams, "xet_global_dedupe_hits_total"))
	}
	if metric(fams, "xet_backend_duration_seconds") == 0 || metric(fams, "xet_upload_slots") == 0 {
		t.Fatal("no backend calls or upload slots counted")
	}
	e.do("BREW", "/v1/files/"+strings.Repeat("1", 64), nil) // a method a client made up
	fams, text := scrape(t, m)
	var batch bool
	for _, s := range fams["xet_http_requests_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "route" && l.GetValue() == "/{repo}/info/lfs/objects/batch" {
				batch = true
			}
		}
	}
	if !batch {
		t.Fatalf("no batch requests by route template:\n%s", text)
	}
	for _, bad := range []string{"alice", "Bearer", "sig=", "org/a", "eyJ", "BREW", strings.Repeat("1", 64)} {
		if strings.Contains(text, bad) {
			t.Errorf("metrics carry %q", bad)
		}
	}
}

// The access log has one JSON line per request with its route template and the user, and never a
// token, a signature or a query.
func TestAccessLogRouteAndUser(t *testing.T) {
	e, _ := opsEnv(t, nil)
	if err := e.push(t, "org/a", vectors.SplitMix(300_000, 1)); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/xorbs/default/"+strings.Repeat("0", 64)+"?sig=secret-signature&exp=1", nil)
	lines := strings.Split(strings.TrimSpace(e.logs.String()), "\n")
	var users, batches int
	for _, l := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		if v["message"] != "request" {
			continue
		}
		if v["route"] == "" || v["status"] == nil || v["bytes"] == nil || v["duration"] == nil {
			t.Errorf("line lacks a field: %s", l)
		}
		if v["route"] == "/{repo}/info/lfs/objects/batch" {
			batches++
		}
		if v["user"] == "alice" {
			users++
		}
	}
	if batches == 0 || users < 2 {
		t.Fatalf("%d batch lines, %d lines naming alice:\n%s", batches, users, e.logs.String())
	}
	for _, bad := range []string{"secret-signature", "sig=", "Bearer", alicePW, "eyJ"} {
		if strings.Contains(e.logs.String(), bad) {
			t.Errorf("the log carries %q", bad)
		}
	}
}

// A repository over its quota is refused before any bytes of a push (the batch answers 507 with
// the message the user sees); another repository still pushes; a client holding a token is
// refused at the xorb route with the same message; nothing of the refused push is stored.
func TestQuotaRefusesPush(t *testing.T) {
	e, m := opsEnv(t, func(c *Config) { c.Quotas = &Quotas{Default: 3 << 20, Repos: []QuotaRule{{"org/big", 0}}} })
	first := vectors.SplitMix(2_000_000, 2)
	if err := e.push(t, "org/x", first); err != nil {
		t.Fatal(err)
	}
	xorbsBefore := countXorbs(t, e.st)
	err := e.push(t, "org/x", vectors.SplitMix(2_000_000, 3))
	if err == nil || !strings.Contains(err.Error(), "repository org/x is over its 3 MiB quota on 127.0.0.1:") {
		t.Fatalf("push over the quota: %v", err)
	}
	if err := e.push(t, "org/x", vectors.SplitMix(5_000_000, 4)); err == nil || !strings.Contains(err.Error(), "larger than the 3 MiB quota of repository org/x") {
		t.Fatalf("an object over the quota by itself: %v", err)
	}
	if n := countXorbs(t, e.st); n != xorbsBefore {
		t.Fatalf("xorbs: %d before the refused pushes, %d after", xorbsBefore, n)
	}
	if err := e.push(t, "org/y", vectors.SplitMix(2_000_000, 5)); err != nil {
		t.Fatalf("another repository: %v", err)
	}
	if err := e.push(t, "org/big", vectors.SplitMix(4_000_000, 6)); err != nil {
		t.Fatalf("a repository without a quota: %v", err)
	}
	// An agent that already holds a token for org/x, now full, is told at its first xorb.
	tok, err := e.srv.tokens.Issue(Claims{Namespace: "org/x", Scope: scopeWrite, Exp: time.Now().Add(time.Hour).Unix(), Subject: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.push(t, "org/x", first); err != nil {
		t.Fatalf("a file the repository has: %v", err)
	}
	up := &lfsbatch.Action{Href: e.base + "/api/models/org/x/xet-write-token/main", Header: map[string]string{
		lfsbatch.HeaderCasURL: e.base, lfsbatch.HeaderAccessToken: tok, lfsbatch.HeaderTokenExpiration: "4102444800"}}
	e.srv.cfg.Quotas.Default = 1 << 20 // the operator lowers the quota under what org/x holds
	e.srv.quota.mu.Lock()
	clear(e.srv.quota.m) // read again at the next check
	e.srv.quota.mu.Unlock()
	sess := upload.NewSession(upload.Config{CAS: casClient(t, up, "alice", alicePW)})
	defer sess.Close()
	more := vectors.SplitMix(100_000, 8)
	sum := sha256.Sum256(more)
	_, err = sess.Upload(context.Background(), bytes.NewReader(more), &sum, nil)
	if err == nil {
		err = sess.Finish(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "repository org/x is over its 1 MiB quota") {
		t.Fatalf("xet client with a token, repository over its quota: %v", err)
	}
	fams, _ := scrape(t, m)
	if metric(fams, "xet_quota_refusals_total") < 3 {
		t.Fatalf("quota refusals counted: %v", metric(fams, "xet_quota_refusals_total"))
	}
}

func countXorbs(t *testing.T, st *store.Store) int {
	t.Helper()
	s, err := store.NewMaint(st).Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.Xorbs
}

// While the server drains, new requests get 503 with Retry-After and a closed connection, /readyz
// fails and /healthz does not; a request in flight when the drain began completes.
func TestDrain(t *testing.T) {
	e, _ := opsEnv(t, func(c *Config) { c.Users = nil })
	if r := e.do("GET", "/readyz", nil); r.status != 200 {
		t.Fatalf("readyz before the drain: %v", r)
	}
	r := loadRef(t)
	pr, pw := io.Pipe()
	done := make(chan resp, 1)
	go func() {
		req, _ := http.NewRequest("POST", e.base+"/v1/xorbs/default/"+r.xorbHash.String(), pr)
		req.ContentLength = int64(len(r.xorbBody))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- resp{status: -1, body: []byte(err.Error())}
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		done <- resp{status: res.StatusCode, body: b}
	}()
	half := len(r.xorbBody) / 2
	if _, err := pw.Write(r.xorbBody[:half]); err != nil {
		t.Fatal(err)
	}
	// The handler holds its upload slot: the request is in flight.
	if !testutil.Eventually(10*time.Second, func() bool { return e.srv.xorbs.inUse() > 0 }) {
		t.Fatal("the upload never took a slot")
	}
	e.srv.Drain()
	res := e.do("GET", "/v1/files/"+r.fileHash.String(), nil)
	if res.status != 503 || res.header.Get("Retry-After") == "" {
		t.Fatalf("a new request while draining: %v %v", res, res.header)
	}
	if res := e.do("GET", "/readyz", nil); res.status != 503 {
		t.Fatalf("readyz while draining: %v", res)
	}
	if res := e.do("GET", "/healthz", nil); res.status != 200 {
		t.Fatalf("healthz while draining: %v", res)
	}
	if _, err := pw.Write(r.xorbBody[half:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if got := <-done; got.status != 200 {
		t.Fatalf("the request in flight: %v", got)
	}
}

// /readyz fails while the storage does not answer.
func TestReadyzFailsWithoutStorage(t *testing.T) {
	down := errors.New("bucket unreachable")
	var fail atomic.Bool
	e, _ := opsEnv(t, func(c *Config) {
		c.Ready = func(context.Context) error {
			if fail.Load() {
				return down
			}
			return nil
		}
	})
	if r := e.do("GET", "/readyz", nil); r.status != 200 {
		t.Fatalf("readyz: %v", r)
	}
	fail.Store(true)
	if r := e.do("GET", "/readyz", nil); r.status != 503 {
		t.Fatalf("readyz with the storage down: %v", r)
	}
}

// A "user:NAME" quota limits the repositories under NAME/ together: a push to a second repository
// of the owner that would take them over is refused with the message; another owner's repository
// pushes.
func TestOwnerQuota(t *testing.T) {
	e, _ := opsEnv(t, func(c *Config) { c.Quotas = &Quotas{Owners: []QuotaRule{{"team", 3 << 20}}} })
	shared := vectors.SplitMix(1_000_000, 9)
	if err := e.push(t, "team/a", append(vectors.SplitMix(1_000_000, 10), shared...)); err != nil {
		t.Fatal(err)
	}
	err := e.push(t, "team/b", vectors.SplitMix(2_000_000, 11))
	if err == nil || !strings.Contains(err.Error(), "the repositories of team are over their 3 MiB quota on 127.0.0.1:") {
		t.Fatalf("a push over the owner's quota: %v", err)
	}
	if err := e.push(t, "other/c", vectors.SplitMix(2_000_000, 12)); err != nil {
		t.Fatalf("another owner: %v", err)
	}
	if err := e.push(t, "team/b", vectors.SplitMix(500_000, 13)); err != nil {
		t.Fatalf("a push within the owner's quota: %v", err)
	}
}
