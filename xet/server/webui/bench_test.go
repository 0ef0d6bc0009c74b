package webui

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// bigRepo is a store holding repository org/big of n small objects, registered 100 to a shard.
func bigRepo(tb testing.TB, n int) *store.Store {
	tb.Helper()
	st, err := store.Open(tb.TempDir(), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	ctx := context.Background()
	a := store.Access{Repo: "org/big", User: "u"}
	for _, b := range testutil.SmallFiles(n, 2000, 100, 1) {
		if _, err := st.PutXorbAs(ctx, a, b.Xorb, bytes.NewReader(b.Body), xorb.Follows{}); err != nil {
			tb.Fatal(err)
		}
		if _, err := st.PutShardAs(ctx, a, b.Shard); err != nil {
			tb.Fatal(err)
		}
	}
	return st
}

// servePage renders the page at path (the repository page of org/big) as a viewer who reads all.
func servePage(tb testing.TB, v *View, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	v.Repo(rec, httptest.NewRequest(http.MethodGet, path, nil), Viewer{CanRead: func(string) bool { return true }, ReadsAll: true})
	if rec.Code != 200 {
		tb.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec
}

// The page of a repository of 10,000 objects (test/webui-render.sh prints these): "usage" is
// store.RepoUsage alone, the numbers `xet-server stats` reads, as the baseline; "first" a page
// of a view that has not read the repository yet (it reads its usage); "again" the next page
// views while the repository does not change. Each reports the process's CPU time per page
// (cpu-ms/op) beside the wall clock, which on a shared machine includes others' turns.
func BenchmarkRepoPage10k(b *testing.B) {
	st := bigRepo(b, 10000)
	ctx := context.Background()
	const path = "/ui/repo?name=org/big&page=50"
	b.Run("usage", func(b *testing.B) {
		cpuPerOp(b, func() {
			if _, err := st.RepoUsage(ctx, "org/big"); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("first", func(b *testing.B) {
		cpuPerOp(b, func() { servePage(b, New(Config{Source: st}), path) })
	})
	b.Run("again", func(b *testing.B) {
		v := New(Config{Source: st})
		servePage(b, v, path)
		cpuPerOp(b, func() { servePage(b, v, path) })
	})
}

// cpuPerOp runs op b.N times and reports the CPU time per run.
func cpuPerOp(b *testing.B, op func()) {
	cpu0 := testutil.ProcessCPU()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64((testutil.ProcessCPU()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
