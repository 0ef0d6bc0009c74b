package upload_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// A CAS on loopback that stores one xorb at a time and answers 503 to a second in flight (the
// first waits, up to a second, for a second to come): the uploads' adaptive limit is halved
// through the CAS client's own retries, and every xorb is stored in the end.
func TestAdaptUploadsShrinkOn503(t *testing.T) {
	var mu sync.Mutex
	inflight, peak, refused, stored := 0, 0, 0, 0
	second := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if !strings.Contains(r.URL.Path, "/xorbs/") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintln(w, `{"type":"result","result":1}`) // a shard (v2 frame, v1 answer)
			return
		}
		mu.Lock()
		if inflight >= 1 {
			refused++
			if refused == 1 {
				close(second)
			}
			mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		inflight++
		peak = max(peak, inflight)
		mu.Unlock()
		select {
		case <-second:
		case <-time.After(time.Second):
		}
		mu.Lock()
		inflight--
		stored++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"was_inserted":true}`)
	}))
	t.Cleanup(srv.Close)
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL, Token: cas.NewRefreshingToken("t", time.Time{}, nil),
		Retry: retry.Policy{Attempts: 20, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}})
	ctl := concurrency.New(concurrency.Config{Start: 4, Max: 4})
	var files [][]byte
	for i := range 6 {
		files = append(files, testutil.RandomBytes(200<<10, uint64(500+i)))
	}
	uploadFiles(t, upload.Config{CAS: c, Policy: xorb.PolicyNone, SeparateFiles: true, Adapt: ctl}, files...)
	mu.Lock()
	defer mu.Unlock()
	if stored < len(files) {
		t.Fatalf("%d xorbs stored, want %d", stored, len(files))
	}
	st := ctl.Stats()
	if refused == 0 || st.Throttled == 0 || st.Low > 2 {
		t.Fatalf("%d uploads refused with 503; controller stats %+v: want the limit of 4 halved at least once", refused, st)
	}
}
