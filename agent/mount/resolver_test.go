package mount

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/agent/mount/xetfile"
)

// Reads that need sources at once are answered in batches of at most MaxBatch, each object asked
// about once; a failure is not kept (the next read asks again).
func TestResolverBatches(t *testing.T) {
	var calls, asked atomic.Int64
	release, entered := make(chan struct{}), make(chan struct{})
	failOnce := map[string]bool{"oid-7": true}
	var mu sync.Mutex
	r := newResolver(func(ctx context.Context, objs []Object) []Found {
		if calls.Add(1) == 1 {
			close(entered)
			<-release // the first batch waits while the others queue up
		}
		if len(objs) > MaxBatch {
			t.Errorf("a batch of %d objects", len(objs))
		}
		asked.Add(int64(len(objs)))
		out := make([]Found, len(objs))
		mu.Lock()
		defer mu.Unlock()
		for i, o := range objs {
			if failOnce[o.Oid] {
				failOnce[o.Oid] = false
				out[i].Err = errors.New("not now")
				continue
			}
			out[i].Source = xetfile.Source{Where: o.Oid}
		}
		return out
	})
	defer r.close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.resolve(context.Background(), Object{Oid: "oid-0"})
	}()
	<-entered // the first batch (oid-0 alone) is under way
	for i := 1; i < 250; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := r.resolve(context.Background(), Object{Oid: fmt.Sprintf("oid-%d", i%240)})
			if err == nil && s.Where != fmt.Sprintf("oid-%d", i%240) {
				t.Errorf("oid-%d resolved to %s", i%240, s.Where)
			}
		}()
	}
	for r.queued() < 239 { // every other object waits for the first batch to end
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if n := calls.Load(); n < 2 || n > 5 {
		t.Errorf("%d batches for 240 objects", n)
	}
	if s, err := r.resolve(context.Background(), Object{Oid: "oid-7"}); err != nil || s.Where != "oid-7" {
		t.Errorf("a failed object asked again: %v", err)
	}
	if n := asked.Load(); n != 241 {
		t.Errorf("%d objects asked about, want 241 (240 once, the failed one twice)", n)
	}
}

func (r *resolver) queued() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue)
}
