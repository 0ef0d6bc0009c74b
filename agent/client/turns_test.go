package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Related uploads to one endpoint take turns, the oldest file first among those waiting; a waiter
// whose context ends leaves the queue; an unrelated file and another endpoint do not wait.
func TestTurnsOldestFirst(t *testing.T) {
	dir := t.TempDir()
	path := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		mt := time.Now().Add(-age)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var tr turns
	e, other := &endpoint{}, &endpoint{}
	kin := sample{hash.Chunk([]byte("shared")): {}}
	stranger := sample{hash.Chunk([]byte("other")): {}}
	ctx := context.Background()
	first, err := tr.take(ctx, e, path("now", 0), kin)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	waiting := func(n int) bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.families[e]) > 0 && len(tr.families[e][0].waiting) == n
	}
	for i, f := range []struct {
		name string
		age  time.Duration
	}{{"v3", time.Hour}, {"v1", 3 * time.Hour}, {"v2", 2 * time.Hour}} {
		p := path(f.name, f.age)
		wg.Go(func() {
			done, err := tr.take(ctx, e, p, kin)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, f.name)
			mu.Unlock()
			done()
		})
		for !waiting(i + 1) {
			time.Sleep(time.Millisecond)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error)
	go func() { _, err := tr.take(cctx, e, path("v0", 4*time.Hour), kin); gone <- err }()
	for !waiting(4) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	for _, o := range []struct {
		e *endpoint
		s sample
	}{{other, kin}, {e, stranger}} {
		done, err := tr.take(ctx, o.e, path("elsewhere", 0), o.s)
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
	first()
	wg.Wait()
	if want := []string{"v1", "v2", "v3"}; len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("turns in order %v, want %v", order, want)
	}
	if len(tr.families[e]) != 0 {
		t.Fatalf("%d families left after every turn ended", len(tr.families[e]))
	}
}
