package cas_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// BenchmarkPutXorb measures the client's side of a 64 MiB xorb upload over TLS on loopback, with
// HTTP/1.1 and HTTP/2, to a server that only reads the body: the cost of handing the body to the
// transport (see lentBodies).
func BenchmarkPutXorb(b *testing.B) {
	for _, h2 := range []bool{false, true} {
		name := "http1"
		if h2 {
			name = "http2"
		}
		b.Run(name, func(b *testing.B) {
			s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				io.WriteString(w, `{"was_inserted":true}`)
			}))
			s.EnableHTTP2 = h2
			s.StartTLS()
			defer s.Close()
			c := cas.NewHTTP(cas.HTTPOptions{Endpoint: s.URL, HTTPClient: s.Client(), Retry: retry.Policy{Attempts: 1}})
			x := &xorb.Xorb{Hash: hash.Hash{1}, Body: make([]byte, 64<<20)}
			b.SetBytes(int64(x.Size()))
			cpu0 := testutil.ProcessCPU()
			for b.Loop() {
				if _, err := c.PutXorb(context.Background(), x); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU per upload, the server's reading included: steadier than the wall
			// clock on a shared machine.
			b.ReportMetric(float64((testutil.ProcessCPU()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
