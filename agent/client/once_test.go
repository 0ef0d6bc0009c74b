package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Callers that come while a value is being found wait for that one attempt; a failed attempt is
// answered to its waiters and tried again by the next caller; a found value is kept.
func TestOnceOneAttemptAtATime(t *testing.T) {
	var o once[int]
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
		wg.Go(func() { got[i], _ = o.get(context.Background(), find) })
	}
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
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

	var f once[int]
	boom := errors.New("boom")
	if _, err := f.get(context.Background(), func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("first attempt: %v", err)
	}
	if v, err := f.get(context.Background(), func(context.Context) (int, error) { return 3, nil }); err != nil || v != 3 {
		t.Fatalf("after a failure: %d, %v; want a new attempt", v, err)
	}
	if v, _ := f.get(context.Background(), func(context.Context) (int, error) { return 4, nil }); v != 3 {
		t.Fatalf("the found value was not kept: %d", v)
	}
}

// A waiter whose own context ends stops waiting; the attempt goes on for the others.
func TestOnceWaiterStopsWithItsContext(t *testing.T) {
	var o once[string]
	release := make(chan struct{})
	started := make(chan struct{})
	done := make(chan string)
	go func() {
		v, _ := o.get(context.Background(), func(context.Context) (string, error) { close(started); <-release; return "x", nil })
		done <- v
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.get(ctx, func(context.Context) (string, error) {
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

// Finding one key's value does not hold up another key.
func TestOnceMapKeysIndependent(t *testing.T) {
	var m onceMap[string, int]
	release := make(chan struct{})
	started := make(chan struct{})
	go m.get(context.Background(), "slow", func(context.Context) (int, error) { close(started); <-release; return 1, nil })
	<-started
	v, err := m.get(context.Background(), "fast", func(context.Context) (int, error) { return 2, nil })
	if err != nil || v != 2 {
		t.Fatalf("fast key: %d, %v", v, err)
	}
	if _, ok := m.peek("slow"); ok {
		t.Fatal("slow key found before its attempt ended")
	}
	close(release)
	for {
		if v, ok := m.peek("slow"); ok {
			if v != 1 {
				t.Fatalf("slow key: %d", v)
			}
			break
		}
		time.Sleep(time.Millisecond)
	}
	if n := len(m.found()); n != 2 {
		t.Fatalf("found %d values, want 2", n)
	}
}
