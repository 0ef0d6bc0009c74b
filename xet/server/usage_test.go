package server

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// gatedUsage is a UsageStore whose reads wait for the test: each read counts itself, signals
// entered, then waits for release and answers bytes.
type gatedUsage struct {
	reads   atomic.Int32
	entered chan struct{}
	release chan struct{}
	bytes   uint64
}

func (g *gatedUsage) RepoStoredBytes(ctx context.Context, ns string) (uint64, error) {
	g.reads.Add(1)
	g.entered <- struct{}{}
	<-g.release
	return g.bytes, nil
}

func (g *gatedUsage) OwnerStoredBytes(ctx context.Context, owner string) (uint64, error) {
	return g.RepoStoredBytes(ctx, owner)
}

func (g *gatedUsage) ShardAdds(context.Context, store.Access, []byte) (uint64, uint64, error) {
	return 0, 0, nil
}

// An upload stored while the usage is being read is not lost: the read began before it, so what
// it adds is kept on top of the read's answer. And the gets that arrive while one read is in
// flight share it (one read of all the repository's entries, not one per request).
func TestUsageCacheKeepsAddDuringRead(t *testing.T) {
	g := &gatedUsage{entered: make(chan struct{}, 16), release: make(chan struct{}), bytes: 1000}
	c := newUsageCache(g)
	var wg sync.WaitGroup
	got := make([]uint64, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, _ = c.get(t.Context(), "org/x")
		}()
	}
	<-g.entered // a read is in flight
	c.add([]string{"org/x"}, 500)
	close(g.release)
	wg.Wait()
	if n := g.reads.Load(); n != 1 {
		t.Errorf("%d reads of the store for 8 gets at once, want 1", n)
	}
	after, _, err := c.get(t.Context(), "org/x")
	if err != nil || after != 1500 {
		t.Fatalf("usage after an upload of 500 stored during the read of 1000: %d, %v; want 1500", after, err)
	}
}
