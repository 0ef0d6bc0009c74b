package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// poolMetric is the value of name's series for pool (a histogram's sample count).
func poolMetric(fams map[string]*dto.MetricFamily, name, pool string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "pool" && l.GetValue() == pool {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue(), true
				case m.Gauge != nil:
					return m.Gauge.GetValue(), true
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount()), true
				}
			}
		}
	}
	return 0, false
}

// An operator sees the line for upload slots: how many requests wait (a busy server makes plain
// git-lfs clients give up after their 30 s activity timeout), how long requests waited, and how
// many slots were taken back from slow uploads. Before, the metrics showed only the slots in use.
func TestSlotMetricsShowTheLine(t *testing.T) {
	m := NewMetrics()
	e := newEnv(t, func(c *Config) { c.Metrics = m })
	x := randomXorb(t, 1<<20, 71)
	// Eight users hold the eight xorb slots, one each: at their share, none is cut. The first one's
	// body is the test's to end.
	pr, pw := io.Pipe()
	defer pw.Close()
	first := make(chan int, 1)
	u0 := e.token("u0", "u0/r", scopeWrite, time.Hour)
	go func() { first <- post(e.base+"/v1/xorbs/default/"+x.Hash.String(), u0, pr, int64(len(x.Body))) }()
	if _, err := pw.Write(x.Body[:1000]); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 8; i++ {
		u := fmt.Sprintf("u%d", i)
		slowUpload(t, e, e.token(u, u+"/r", scopeWrite, time.Hour), x.Body, x.Hash.String(), 64<<20, 17000)
	}
	if !testutil.Eventually(10*time.Second, func() bool { return e.srv.xorbs.inUse() == 8 }) {
		t.Fatalf("the uploads hold %d slots, want 8", e.srv.xorbs.inUse())
	}
	for _, pool := range []string{"xorb", "basic", "shard_body", "shard_registration"} {
		if v, ok := poolMetric(fams(t, m), "xet_upload_slot_waiters", pool); !ok || v != 0 {
			t.Errorf("xet_upload_slot_waiters{pool=%q} = %v (present %v), want 0", pool, v, ok)
		}
	}

	// Bob waits until the first upload ends.
	bx := randomXorb(t, 64<<10, 72)
	bob := make(chan int, 1)
	bobTok := e.token("bob", "bob/r", scopeWrite, time.Hour)
	go func() {
		bob <- post(e.base+"/v1/xorbs/default/"+bx.Hash.String(), bobTok, bytes.NewReader(bx.Body), int64(len(bx.Body)))
	}()
	if !testutil.Eventually(10*time.Second, func() bool {
		v, _ := poolMetric(fams(t, m), "xet_upload_slot_waiters", "xorb")
		return v == 1
	}) {
		t.Fatal("xet_upload_slot_waiters{pool=\"xorb\"} never showed bob waiting")
	}
	if _, err := pw.Write(x.Body[1000:]); err != nil {
		t.Fatal(err)
	}
	if st := <-first; st != http.StatusOK {
		t.Fatalf("the first upload: %d", st)
	}
	if st := <-bob; st != http.StatusOK {
		t.Fatalf("bob's upload: %d", st)
	}
	if !testutil.Eventually(10*time.Second, func() bool {
		v, _ := poolMetric(fams(t, m), "xet_upload_slot_wait_seconds", "xorb")
		return v == 9
	}) {
		v, _ := poolMetric(fams(t, m), "xet_upload_slot_wait_seconds", "xorb")
		t.Fatalf("xet_upload_slot_wait_seconds{pool=\"xorb\"} counts %v waits, want 9 (eight at once, then bob's)", v)
	}
	if v, _ := poolMetric(fams(t, m), "xet_upload_slot_waiters", "xorb"); v != 0 {
		t.Errorf("%v waiters after bob's turn came, want 0", v)
	}
	// The eight took their slots at once: the sum is bob's wait.
	for _, mm := range fams(t, m)["xet_upload_slot_wait_seconds"].GetMetric() {
		if mm.GetLabel()[0].GetValue() == "xorb" && mm.GetHistogram().GetSampleSum() <= 0 {
			t.Errorf("the waits sum to %vs, want bob's wait in it", mm.GetHistogram().GetSampleSum())
		}
	}
}

// Slots taken back from a slow user while another waits are counted.
func TestSlotMetricsCountCuts(t *testing.T) {
	m := NewMetrics()
	e := newEnv(t, func(c *Config) { c.Metrics = m })
	x := randomXorb(t, 1<<20, 73)
	alice := e.token("alice", "alice/r", scopeWrite, time.Hour)
	for range 8 {
		slowUpload(t, e, alice, x.Body, x.Hash.String(), 64<<20, 17000)
	}
	if !testutil.Eventually(10*time.Second, func() bool { return e.srv.xorbs.inUse() == 8 }) {
		t.Fatalf("alice's uploads hold %d slots, want 8", e.srv.xorbs.inUse())
	}
	bx := randomXorb(t, 256<<10, 74)
	if res := e.do("POST", "/v1/xorbs/default/"+bx.Hash.String(), bx.Body, "Authorization", "Bearer "+e.token("bob", "bob/r", scopeWrite, time.Hour)); res.status != http.StatusOK {
		t.Fatalf("bob's upload: %v", res)
	}
	if v, _ := poolMetric(fams(t, m), "xet_upload_slots_cut_total", "xorb"); v != 4 {
		t.Errorf("xet_upload_slots_cut_total{pool=\"xorb\"} = %v, want alice's 4 cut while bob waited", v)
	}
}

// post sends body (n bytes) to url with tok and returns the answer's status (0: no answer).
func post(url, tok string, body io.Reader, n int64) int {
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		return 0
	}
	req.ContentLength = n
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

func fams(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	f, _ := scrape(t, m)
	return f
}
