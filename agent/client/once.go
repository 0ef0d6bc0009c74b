package client

import (
	"context"
	"sync"
)

// once is a value found on first use and kept for the process. A caller that comes while it is
// being found waits for that attempt and gets its answer (or stops waiting when its own ctx ends);
// no lock is held while it is found, so callers of other values never wait for it. A failed
// attempt is not kept: the next caller tries again. The zero value is ready to use.
type once[T any] struct {
	mu  sync.Mutex
	ok  bool
	v   T
	cur *attempt[T] // the attempt under way, if any
}

type attempt[T any] struct {
	done chan struct{} // closed when v and err are set
	v    T
	err  error
}

// get returns the value, finding it with find when no earlier attempt succeeded.
func (o *once[T]) get(ctx context.Context, find func(context.Context) (T, error)) (T, error) {
	o.mu.Lock()
	if o.ok {
		defer o.mu.Unlock()
		return o.v, nil
	}
	a, run := o.cur, false
	if a == nil {
		a, run = &attempt[T]{done: make(chan struct{})}, true
		o.cur = a
	}
	o.mu.Unlock()
	if run {
		a.v, a.err = find(ctx)
		o.mu.Lock()
		if a.err == nil {
			o.v, o.ok = a.v, true
		}
		o.cur = nil
		o.mu.Unlock()
		close(a.done)
		return a.v, a.err
	}
	select {
	case <-a.done:
		return a.v, a.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// peek returns the value when it has been found.
func (o *once[T]) peek() (T, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.v, o.ok
}

// onceMap is a once per key: values found on first use of their key (endpoints by CAS URL or
// store directory). Finding one key's value never makes callers of another key wait.
type onceMap[K comparable, T any] struct {
	mu sync.Mutex
	m  map[K]*once[T]
}

// get returns the value of key, finding it with find on first use.
func (om *onceMap[K, T]) get(ctx context.Context, key K, find func(context.Context) (T, error)) (T, error) {
	om.mu.Lock()
	if om.m == nil {
		om.m = map[K]*once[T]{}
	}
	o := om.m[key]
	if o == nil {
		o = &once[T]{}
		om.m[key] = o
	}
	om.mu.Unlock()
	return o.get(ctx, find)
}

// peek returns the value of key when it has been found.
func (om *onceMap[K, T]) peek(key K) (T, bool) {
	om.mu.Lock()
	o := om.m[key]
	om.mu.Unlock()
	if o == nil {
		var zero T
		return zero, false
	}
	return o.peek()
}

// found returns the values found so far.
func (om *onceMap[K, T]) found() []T {
	om.mu.Lock()
	defer om.mu.Unlock()
	var out []T
	for _, o := range om.m {
		if v, ok := o.peek(); ok {
			out = append(out, v)
		}
	}
	return out
}
