package download_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas/castest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// BenchmarkLocalCopy: a whole file copied from a local copy of it (every chunk hash-checked, the
// SHA-256 computed): the cost per byte of a delta download's unchanged part.
func BenchmarkLocalCopy(b *testing.B) {
	c := castest.NewCounting(embeddedtest.New(b))
	data := testutil.RandomBytes(128<<20, 3)
	res := uploadAll(b, c, data)[0]
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	sum := res.SHA256
	var sp spans
	var mu sync.Mutex // OnTerm is called by the ranges' goroutines
	err := download.Download(context.Background(), download.Config{CAS: c}, download.Request{
		File: res.FileHash, SHA256: &sum, Size: res.Size, Path: src,
		OnTerm: func(s span.Span) { mu.Lock(); s.Path = src; sp = append(sp, s); mu.Unlock() }})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var st download.Stats
		err := download.Download(context.Background(), download.Config{CAS: c}, download.Request{
			File: res.FileHash, SHA256: &sum, Size: res.Size, Path: filepath.Join(dir, "out"), NoSync: true,
			Local: sp, Stats: &st})
		if err != nil || st.Local != int64(len(data)) {
			b.Fatal(err, st)
		}
	}
}
