package lazy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Callers that come while a value is being found wait for that one attempt; a failed attempt is
// answered to its waiters and tried again by the next caller; a found value is kept.
func TestOneAttemptAtATime(t *testing.T) {
	var o Value[int]
	var calls atomic.Int32
	release := make(chan struct{})
	find := func(context.Context) (int, error) {
		calls.Add(1)
		<-release
		return 7, nil
	}
	var wg sync.WaitGroup
	got := make([]int, 8)
	for i := range got {
		wg.Go(func() { got[i], _ = o.Get(context.Background(), find) })
	}
	if !testutil.Eventually(10*time.Second, func() bool { return calls.Load() > 0 }) {
		t.Fatal("no attempt started")
	}
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("found %d times, want once", calls.Load())
	}
	for _, v := range got {
		if v != 7 {
			t.Fatalf("values %v, want all 7", got)
		}
	}

	var f Value[int]
	boom := errors.New("boom")
	if _, err := f.Get(context.Background(), func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("first attempt: %v", err)
	}
	if v, err := f.Get(context.Background(), func(context.Context) (int, error) { return 3, nil }); err != nil || v != 3 {
		t.Fatalf("after a failure: %d, %v; want a new attempt", v, err)
	}
	if v, _ := f.Get(context.Background(), func(context.Context) (int, error) { return 4, nil }); v != 3 {
		t.Fatalf("the found value was not kept: %d", v)
	}
}

// A waiter whose own context ends stops waiting; the attempt goes on for the others.
func TestWaiterStopsWithItsContext(t *testing.T) {
	var o Value[string]
	release := make(chan struct{})
	started := make(chan struct{})
	done := make(chan string)
	go func() {
		v, _ := o.Get(context.Background(), func(context.Context) (string, error) { close(started); <-release; return "x", nil })
		done <- v
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.Get(ctx, func(context.Context) (string, error) {
		t.Error("a second attempt while one is under way")
		return "", nil
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter: %v, want its context's end", err)
	}
	close(release)
	if v := <-done; v != "x" {
		t.Fatalf("first caller got %q", v)
	}
}

// An attempt cut short by its own caller's context (that caller's Ctrl-C, say) is not a failure
// for the callers waiting on it: one of them tries again, and they get the value.
func TestWaiterTriesAgainWhenTheFinderWasStopped(t *testing.T) {
	var o Value[string]
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	first := make(chan error)
	go func() {
		_, err := o.Get(ctx, func(ctx context.Context) (string, error) { close(started); <-ctx.Done(); return "", ctx.Err() })
		first <- err
	}()
	<-started
	got := make(chan string)
	go func() {
		v, _ := o.Get(context.Background(), func(context.Context) (string, error) { return "again", nil })
		got <- v
	}()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped caller: %v", err)
	}
	if v := <-got; v != "again" {
		t.Fatalf("the waiter got %q, want a new attempt's value", v)
	}
}

// Drop forgets the value only when it is stale, and the next Get finds it again.
func TestDrop(t *testing.T) {
	var o Value[int]
	o.Set(1)
	if o.Drop(func(v int) bool { return v == 2 }) {
		t.Fatal("dropped a value that was not stale")
	}
	if !o.Drop(func(v int) bool { return v == 1 }) {
		t.Fatal("kept a stale value")
	}
	if v, _ := o.Get(context.Background(), func(context.Context) (int, error) { return 5, nil }); v != 5 {
		t.Fatalf("after Drop: %d, want a new value", v)
	}
}

// Finding one key's value does not hold up another key.
func TestMapKeysIndependent(t *testing.T) {
	var m Map[string, int]
	release := make(chan struct{})
	started := make(chan struct{})
	slow := make(chan int)
	go func() {
		v, _ := m.Get(context.Background(), "slow", func(context.Context) (int, error) { close(started); <-release; return 1, nil })
		slow <- v
	}()
	<-started
	v, err := m.Get(context.Background(), "fast", func(context.Context) (int, error) { return 2, nil })
	if err != nil || v != 2 {
		t.Fatalf("fast key: %d, %v", v, err)
	}
	if _, ok := m.Peek("slow"); ok {
		t.Fatal("slow key found before its attempt ended")
	}
	close(release)
	if v := <-slow; v != 1 {
		t.Fatalf("slow key: %d", v)
	}
	if n := len(m.Found()); n != 2 {
		t.Fatalf("found %d values, want 2", n)
	}
	m.Delete("fast")
	if _, ok := m.Peek("fast"); ok || len(m.Found()) != 1 {
		t.Fatal("a deleted key is still found")
	}
}
