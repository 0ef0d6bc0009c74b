package webui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// A usage is read once while the repository's entry count stays the same and its time is not up;
// pages that ask while a read runs share it; a new count, or the time passing, reads again; a
// failed read is not kept.
func TestMemoReadsOnChangeOnly(t *testing.T) {
	m := newMemo(time.Hour, 2)
	ctx := context.Background()
	var reads atomic.Int32
	release := make(chan struct{})
	read := func(context.Context) (store.Usage, error) {
		reads.Add(1)
		<-release
		return store.Usage{Files: int(reads.Load())}, nil
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if u, err := m.usage(ctx, "org/a", 7, read); err != nil || u.Files != 1 {
				t.Errorf("shared read: %+v %v", u, err)
			}
		})
	}
	if !testutil.Eventually(5*time.Second, func() bool { return reads.Load() > 0 }) {
		t.Fatal("no read started")
	}
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("5 pages at once made %d reads, want 1", n)
	}
	if u, _ := m.usage(ctx, "org/a", 7, read); u.Files != 1 || reads.Load() != 1 {
		t.Fatalf("same entry count: read again (%d reads)", reads.Load())
	}
	if u, _ := m.usage(ctx, "org/a", 8, read); u.Files != 2 {
		t.Fatalf("a new entry count kept the old usage: %+v", u)
	}
	short := newMemo(time.Nanosecond, 1)
	short.usage(ctx, "org/a", 8, read) // a nanosecond: stale by the next call
	if short.usage(ctx, "org/a", 8, read); reads.Load() != 4 {
		t.Fatalf("a read older than the memo's time was kept (%d reads)", reads.Load())
	}
	fail := func(context.Context) (store.Usage, error) { return store.Usage{}, context.DeadlineExceeded }
	if _, err := m.usage(ctx, "org/b", 1, fail); err == nil {
		t.Fatal("a failed read answered")
	}
	if u, err := m.usage(ctx, "org/b", 1, read); err != nil || u.Files != 5 {
		t.Fatalf("after a failed read: %+v %v", u, err)
	}
}

// The chart of one registration, of registrations at one instant and of a long history stays
// within its box with at most chartPoints steps per line, and its last values are the sums.
func TestChartBounds(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{1, 3, 10000} {
		var h []store.Registration
		var size, fresh uint64
		for i := range n {
			r := store.Registration{Time: at.Add(time.Duration(i/2) * time.Minute), Size: uint64(1000 + i), New: uint64(i % 700)}
			if n == 3 {
				r.Time = at
			}
			h = append(h, r)
			size, fresh = size+r.Size, fresh+r.New
		}
		c := buildChart(h)
		if c.LastLogical != size || c.LastStored != fresh || c.Records != n {
			t.Fatalf("%d records: last %d %d, want %d %d", n, c.LastLogical, c.LastStored, size, fresh)
		}
		for _, line := range []string{c.Logical, c.Stored} {
			pts := strings.Fields(line)
			if len(pts) > 2*chartPoints+1 {
				t.Fatalf("%d records: %d points", n, len(pts))
			}
			for _, p := range pts {
				var x, y float64
				if _, err := fmt.Sscanf(p, "%g,%g", &x, &y); err != nil || x < plotL || x > plotL+plotW || y < plotT || y > plotT+plotH {
					t.Fatalf("%d records: point %q outside the plot (%v)", n, p, err)
				}
			}
		}
		if len(c.XTicks) == 0 || len(c.YTicks) != yTickCount+1 {
			t.Fatalf("%d records: ticks %+v %+v", n, c.XTicks, c.YTicks)
		}
	}
	if buildChart(nil) != nil {
		t.Fatal("a chart of no history")
	}
}
