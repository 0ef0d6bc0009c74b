package xetfile

import (
	"context"
	"sync"
	"time"
)

// lazy is a value found on first use by one attempt that every caller waits for. The attempt runs
// in the background (Files.goBackground), so a caller that stops waiting (its read was
// interrupted) does not stop it for the others; a failed attempt is not kept. The zero value is
// ready to use.
type lazy[T comparable] struct {
	mu  sync.Mutex
	ok  bool
	v   T
	cur *lazyCall[T]
}

type lazyCall[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// get returns the value, starting an attempt (find) when there is neither a value nor an attempt
// under way; it waits at most fs.cfg.Wait. what names the value in a timeout's error.
func (l *lazy[T]) get(ctx context.Context, fs *Files, what string, find func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	v, c, ok := l.attempt(fs, find)
	if ok {
		return v, nil
	}
	if c == nil {
		return zero, ErrClosed
	}
	t := time.NewTimer(fs.cfg.Wait)
	defer t.Stop()
	select {
	case <-c.done:
		return c.v, c.err
	case <-ctx.Done():
	case <-t.C:
	case <-fs.closing:
	}
	return zero, fs.waitErr(ctx, what)
}

// start starts an attempt when there is neither a value nor an attempt under way, and returns.
func (l *lazy[T]) start(fs *Files, find func(ctx context.Context) (T, error)) {
	l.attempt(fs, find)
}

// attempt returns the value (ok), or the attempt under way, started here when there was none (nil
// when the Files are closed).
func (l *lazy[T]) attempt(fs *Files, find func(ctx context.Context) (T, error)) (T, *lazyCall[T], bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ok {
		return l.v, nil, true
	}
	var zero T
	if l.cur != nil {
		return zero, l.cur, false
	}
	c := &lazyCall[T]{done: make(chan struct{})}
	l.cur = c
	started := fs.goBackground(func(ctx context.Context) {
		v, err := find(ctx)
		l.mu.Lock()
		c.v, c.err = v, err
		if err == nil {
			l.v, l.ok = v, true
		}
		l.cur = nil
		l.mu.Unlock()
		close(c.done)
	})
	if !started {
		l.cur = nil
		return zero, nil, false
	}
	return zero, c, false
}

// forget drops the value when it is still old, so that the next get finds it anew.
func (l *lazy[T]) forget(old T) {
	l.mu.Lock()
	if l.ok && l.v == old {
		var zero T
		l.v, l.ok = zero, false
	}
	l.mu.Unlock()
}

// peekValue returns the value when it has been found.
func (l *lazy[T]) peekValue() (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v, l.ok
}
