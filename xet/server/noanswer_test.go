package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// A request that ends with no answer because its client left is logged and counted as 499 (nginx's
// "client closed request"), not as a 200 nobody received. Seen over HTTP/2, where a client's
// cancel ends the request at once: an upload that gave up waiting for a slot was logged
// "status":200 with no byte sent.
func TestRequestWhoseClientLeftIsLogged499(t *testing.T) {
	m := NewMetrics()
	e := newEnv(t, func(c *Config) { c.Metrics = m })
	h2 := httptest.NewUnstartedServer(e.srv.Handler())
	h2.EnableHTTP2 = true
	h2.StartTLS()
	t.Cleanup(h2.Close)

	x := randomXorb(t, 1<<20, 81)
	for i := range 8 { // one slot each: nobody is cut, a ninth user waits
		u := fmt.Sprintf("u%d", i)
		slowUpload(t, e, e.token(u, u+"/r", scopeWrite, time.Hour), x.Body, x.Hash.String(), 64<<20, 17000)
	}
	if !testutil.Eventually(10*time.Second, func() bool { return e.srv.xorbs.inUse() == 8 }) {
		t.Fatalf("the uploads hold %d slots, want 8", e.srv.xorbs.inUse())
	}
	bx := randomXorb(t, 64<<10, 82)
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, "POST", h2.URL+"/v1/xorbs/default/"+bx.Hash.String(), bytes.NewReader(bx.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token("bob", "bob/r", scopeWrite, time.Hour))
	done := make(chan error, 1)
	go func() {
		res, err := h2.Client().Do(req)
		if err == nil {
			if res.ProtoMajor != 2 {
				err = fmt.Errorf("answered over %s, want HTTP/2", res.Proto)
			}
			res.Body.Close()
		}
		done <- err
	}()
	if !testutil.Eventually(10*time.Second, func() bool { return waiting(e.srv.xorbs, "user:bob") }) {
		t.Fatal("bob's upload never waited for a slot")
	}
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("bob's request: %v, want it canceled", err)
	}
	line := func() string {
		for _, l := range strings.Split(e.logs.String(), "\n") {
			if strings.Contains(l, `"user":"bob"`) && strings.Contains(l, `"message":"request"`) {
				return l
			}
		}
		return ""
	}
	if !testutil.Eventually(5*time.Second, func() bool { return line() != "" }) {
		t.Fatalf("bob's request was never logged:\n%s", e.logs.String())
	}
	if l := line(); !strings.Contains(l, `"status":499`) {
		t.Errorf("bob's request, which got no answer, was logged as %s", l)
	}
	fams, _ := scrape(t, m)
	n := 0.0
	for _, mm := range fams["xet_http_requests_total"].GetMetric() {
		for _, l := range mm.GetLabel() {
			if l.GetName() == "code" && l.GetValue() == "499" {
				n += mm.GetCounter().GetValue()
			}
		}
	}
	if n != 1 {
		t.Errorf("xet_http_requests_total{code=\"499\"} = %v, want bob's request", n)
	}
}
