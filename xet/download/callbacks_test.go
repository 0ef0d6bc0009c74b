package download_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// A callback that blocks (OnPart writing a partial record to a stalled disk) holds up its own range
// only: the download's other ranges go on writing and reporting progress meanwhile, and the
// download completes, verified, once it returns.
func TestSlowCallbackHoldsOnlyItsRange(t *testing.T) {
	c := embeddedtest.New(t)
	const part = 20 << 20
	data, res := manyXorbs(t, c, 4, part)
	plan, err := c.Reconstruct(context.Background(), res.FileHash, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := plan.Terms[0].Hash
	release := make(chan struct{})
	var blocked atomic.Bool
	var mu sync.Mutex
	var done atomic.Int64
	var parts int64
	sum := res.SHA256
	errc := make(chan error, 1)
	go func() {
		errc <- download.Download(context.Background(), download.Config{CAS: c, Concurrency: 4}, download.Request{
			File: res.FileHash, SHA256: &sum, Size: res.Size, Path: filepath.Join(t.TempDir(), "out"),
			Progress: func(n int64) { done.Store(n) },
			OnTerm:   func(span.Span) {},
			OnPart: func(sp span.Span) {
				if sp.Xorb == first && !blocked.Swap(true) {
					<-release
				}
				mu.Lock() // the callee's own lock: calls may come from several ranges at once
				parts += sp.Bytes()
				mu.Unlock()
			},
		})
	}()
	if !testutil.Eventually(30*time.Second, func() bool { return blocked.Load() && done.Load() >= 3*part }) {
		close(release)
		t.Fatalf("while one range's OnPart was blocked the download wrote %d of %d bytes; want the other ranges' %d", done.Load(), len(data), 3*part)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if parts != int64(len(data)) {
		t.Fatalf("OnPart heard of %d bytes, the file has %d", parts, len(data))
	}
}
