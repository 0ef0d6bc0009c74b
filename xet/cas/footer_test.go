package cas_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// xorbObject is a stored xorb object as an object store holds it: n chunk records of 100 bytes
// (zeros here: XorbFooter reads only the footer) and a version-1 footer naming x.
func xorbObject(x hash.Hash, n int) ([]byte, *xorb.Footer) {
	f := &xorb.Footer{Version: 1, Hash: x}
	for i := 0; i < n; i++ {
		f.ChunkHashes = append(f.ChunkHashes, randHash())
		f.BoundaryEnds = append(f.BoundaryEnds, uint32(100*(i+1)))
		f.RawEnds = append(f.RawEnds, uint32(92*(i+1)))
	}
	return f.AppendTo(make([]byte, 100*n)), f
}

// objectServer serves obj as an object store's presigned GET does (any range, suffix ranges
// included, through http.ServeContent), or ignoring Range when whole is set; it counts requests.
func objectServer(t *testing.T, obj []byte, whole bool) (string, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if whole {
			r.Header.Del("Range")
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(obj))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/bucket/xorb?X-Amz-Signature=s", &n
}

// XorbFooter reads a footer of any size from an object store's URL with suffix ranges (a second,
// exact read when it is larger than the first), checks it, and says ErrNoFooter when the URL does
// not serve ranges or the footer names another xorb.
func TestXorbFooterFromObjectStore(t *testing.T) {
	ctx := context.Background()
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: "http://127.0.0.1:1", Retry: retry.Policy{Attempts: 1}})
	for _, n := range []int{3, 3000} { // 3000 chunks: a footer of 120 KB, beyond the first read
		x := randHash()
		obj, want := xorbObject(x, n)
		url, reqs := objectServer(t, obj, false)
		got, err := c.XorbFooter(ctx, x, casapi.XorbFetch{URL: url})
		if err != nil {
			t.Fatalf("%d chunks: %v", n, err)
		}
		if len(got.BoundaryEnds) != n || got.BoundaryEnds[n-1] != want.BoundaryEnds[n-1] || got.ChunkHashes[n-1] != want.ChunkHashes[n-1] {
			t.Fatalf("%d chunks: footer read back with %d chunks", n, len(got.BoundaryEnds))
		}
		if wantReqs := map[bool]int32{false: 1, true: 2}[n > 1000]; reqs.Load() != wantReqs {
			t.Fatalf("%d chunks: %d requests, want %d", n, reqs.Load(), wantReqs)
		}
		// Another xorb's object at the URL: refused.
		if _, err := c.XorbFooter(ctx, randHash(), casapi.XorbFetch{URL: url}); !errors.Is(err, cas.ErrNoFooter) {
			t.Fatalf("footer of another xorb: %v", err)
		}
	}
	x := randHash()
	obj, _ := xorbObject(x, 3)
	url, _ := objectServer(t, obj, true)
	if _, err := c.XorbFooter(ctx, x, casapi.XorbFetch{URL: url}); !errors.Is(err, cas.ErrNoFooter) {
		t.Fatalf("a URL answering without ranges: %v", err)
	}
	if _, err := c.XorbFooter(ctx, x, casapi.XorbFetch{}); !errors.Is(err, cas.ErrNoFooter) {
		t.Fatalf("no URL: %v", err)
	}
}
