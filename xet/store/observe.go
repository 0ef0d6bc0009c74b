package store

import (
	"context"
	"io"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// Observer is told of a store's work as it happens (the server's metrics). Its methods are called
// from any goroutine and must not block.
type Observer interface {
	// BackendOp reports one call to the storage: the operation ("create", "create_batch", "open",
	// "exists", "list", "move", "delete"), how long it took, and its error (nil, or a miss,
	// blob.ErrNotFound, which is no failure).
	BackendOp(op string, d time.Duration, err error)
	// Registered reports a shard registered: how many of its files were new to the store, and the
	// bytes of its files' terms in xorbs stored before the shard (not among its own xorbs): the
	// bytes deduplicated.
	Registered(newFiles int, dedupedBytes uint64)
	// Collected reports a gc run (not a dry run) and the bytes it deleted for good.
	Collected(deletedBytes int64)
}

// observed is a backend whose calls are reported to an Observer. The store keeps the unwrapped
// backend for the roles some backends have (blob.Checker, blob.PackSweeper).
type observed struct {
	blob.Backend
	obs Observer
}

func (o observed) done(op string, start time.Time, err error) {
	o.obs.BackendOp(op, time.Since(start), err)
}

func (o observed) Create(ctx context.Context, name string, r io.Reader) (bool, error) {
	start := time.Now()
	c, err := o.Backend.Create(ctx, name, r)
	o.done("create", start, err)
	return c, err
}

func (o observed) CreateBatch(ctx context.Context, blobs []blob.NewBlob) ([]bool, error) {
	start := time.Now()
	c, err := o.Backend.CreateBatch(ctx, blobs)
	o.done("create_batch", start, err)
	return c, err
}

func (o observed) Open(ctx context.Context, name string) (blob.Blob, error) {
	start := time.Now()
	b, err := o.Backend.Open(ctx, name)
	o.done("open", start, err)
	return b, err
}

func (o observed) Exists(ctx context.Context, name string) (bool, error) {
	start := time.Now()
	ok, err := o.Backend.Exists(ctx, name)
	o.done("exists", start, err)
	return ok, err
}

func (o observed) List(ctx context.Context, prefix string) ([]string, error) {
	start := time.Now()
	n, err := o.Backend.List(ctx, prefix)
	o.done("list", start, err)
	return n, err
}

func (o observed) ListInfo(ctx context.Context, prefix string) ([]blob.Info, error) {
	start := time.Now()
	n, err := o.Backend.ListInfo(ctx, prefix)
	o.done("list", start, err)
	return n, err
}

func (o observed) Move(ctx context.Context, from, to string) error {
	start := time.Now()
	err := o.Backend.Move(ctx, from, to)
	o.done("move", start, err)
	return err
}

func (o observed) Delete(ctx context.Context, name string) error {
	start := time.Now()
	err := o.Backend.Delete(ctx, name)
	o.done("delete", start, err)
	return err
}

// nopObserver is the Observer of a store given none.
type nopObserver struct{}

func (nopObserver) BackendOp(string, time.Duration, error) {}
func (nopObserver) Registered(int, uint64)                 {}
func (nopObserver) Collected(int64)                        {}
