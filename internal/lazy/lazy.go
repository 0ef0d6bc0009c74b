// Package lazy is the project's one way to find a value on first use and share that one attempt
// among the callers that come meanwhile (a singleflight that keeps what it found): a process's
// remote, git directory, configuration snapshot and endpoints (agent/client, internal/gitrepo), a
// CAS token until it is dropped (xet/cas), a xorb's footer during a download (xet/download), a
// repository's usage in the web view (xet/server/webui).
//
// Its rules: no lock is held while a value is found, so callers of other values never wait for
// it; a caller whose context ends stops waiting, and the attempt goes on for the others; a failed
// attempt is not kept (the next caller tries again), and an attempt that failed because its own
// caller's context ended is tried again by a waiter whose context has not. Imports no project
// package.
package lazy

import (
	"context"
	"sync"
)

// Value is a value found on first use and kept until Drop. The zero value is ready to use; safe
// for concurrent use.
type Value[T any] struct {
	mu  sync.Mutex
	ok  bool
	v   T
	cur *attempt[T] // the attempt under way, if any
}

type attempt[T any] struct {
	done  chan struct{} // closed when v and err are set
	v     T
	err   error
	ended bool // err came with the end of the finder's context, not from finding
}

// Get returns the value, finding it with find (under the first caller's ctx) when none is kept.
func (o *Value[T]) Get(ctx context.Context, find func(context.Context) (T, error)) (T, error) {
	for {
		o.mu.Lock()
		if o.ok {
			v := o.v
			o.mu.Unlock()
			return v, nil
		}
		a, run := o.cur, false
		if a == nil {
			a, run = &attempt[T]{done: make(chan struct{})}, true
			o.cur = a
		}
		o.mu.Unlock()
		if run {
			o.find(ctx, a, find)
			return a.v, a.err
		}
		select {
		case <-a.done:
			if a.ended && ctx.Err() == nil {
				continue // the finder was stopped, not refused: this caller tries
			}
			return a.v, a.err
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}

// find runs attempt a and keeps its value when it succeeded.
func (o *Value[T]) find(ctx context.Context, a *attempt[T], find func(context.Context) (T, error)) {
	a.v, a.err = find(ctx)
	a.ended = a.err != nil && ctx.Err() != nil
	o.mu.Lock()
	if a.err == nil {
		o.v, o.ok = a.v, true
	}
	o.cur = nil
	o.mu.Unlock()
	close(a.done)
}

// Peek returns the value when one is kept.
func (o *Value[T]) Peek() (T, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.v, o.ok
}

// Set keeps v as the value, as if it had been found.
func (o *Value[T]) Set(v T) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.v, o.ok = v, true
}

// Drop forgets the kept value when stale says it must go (an expired or refused token), so that
// the next Get finds it again; it reports whether it did.
func (o *Value[T]) Drop(stale func(T) bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.ok || !stale(o.v) {
		return false
	}
	var zero T
	o.v, o.ok = zero, false
	return true
}

// Map is a Value per key: values found on first use of their key. Finding one key's value never
// makes callers of another key wait. The zero value is ready to use; safe for concurrent use.
type Map[K comparable, T any] struct {
	mu sync.Mutex
	m  map[K]*Value[T]
}

// Get returns the value of key, finding it with find on first use (see Value.Get).
func (om *Map[K, T]) Get(ctx context.Context, key K, find func(context.Context) (T, error)) (T, error) {
	om.mu.Lock()
	if om.m == nil {
		om.m = map[K]*Value[T]{}
	}
	o := om.m[key]
	if o == nil {
		o = &Value[T]{}
		om.m[key] = o
	}
	om.mu.Unlock()
	return o.Get(ctx, find)
}

// Peek returns the value of key when one is kept.
func (om *Map[K, T]) Peek(key K) (T, bool) {
	om.mu.Lock()
	o := om.m[key]
	om.mu.Unlock()
	if o == nil {
		var zero T
		return zero, false
	}
	return o.Peek()
}

// Delete forgets key and its value (an attempt under way still answers its callers).
func (om *Map[K, T]) Delete(key K) {
	om.mu.Lock()
	defer om.mu.Unlock()
	delete(om.m, key)
}

// Found returns the values kept so far, in no order.
func (om *Map[K, T]) Found() []T {
	om.mu.Lock()
	defer om.mu.Unlock()
	var out []T
	for _, o := range om.m {
		if v, ok := o.Peek(); ok {
			out = append(out, v)
		}
	}
	return out
}
