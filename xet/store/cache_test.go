package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// countingBackend counts Opens.
type countingBackend struct {
	blob.Backend
	opens atomic.Int64
}

func (c *countingBackend) Open(ctx context.Context, name string) (blob.Blob, error) {
	c.opens.Add(1)
	return c.Backend.Open(ctx, name)
}

// The entry cache: an index entry read once is served from memory; a miss is not remembered (an
// entry another instance writes afterwards is found at once); the cache stays within its bound.
func TestEntryCache(t *testing.T) {
	ctx := context.Background()
	be := &countingBackend{Backend: looseBackend(t, t.TempDir())}
	reader, err := Open("", Options{Backend: be, EntryCacheBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	writer, err := Open("", Options{Backend: be.Backend}) // another instance on the same storage
	if err != nil {
		t.Fatal(err)
	}
	r := loadRef(t)
	x := r.xorb(0, 1)
	f := r.file(seg{x, 0, 2})
	if _, _, err := reader.LookupVerifiedSHA256(ctx, "", hash.FromSHA256(f.sha)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("lookup before the upload: %v", err)
	}
	mustPutXorb(t, writer, x)
	if _, err := writer.PutShard(ctx, "", r.shardBytes([]*testFile{f}, x)); err != nil {
		t.Fatal(err)
	}
	lookup := func() {
		t.Helper()
		if got, _, err := reader.LookupVerifiedSHA256(ctx, "", hash.FromSHA256(f.sha)); err != nil || got != f.hash {
			t.Fatalf("lookup after another instance's upload: %v %v", got, err)
		}
	}
	lookup()
	before := be.opens.Load()
	for range 10 {
		lookup()
	}
	if n := be.opens.Load() - before; n != 0 {
		t.Fatalf("%d reads of the storage for 10 lookups of a cached entry", n)
	}
	for i := range 200 {
		reader.entries.put(fmt.Sprintf("dedupe/%03d", i), make([]byte, 100))
	}
	if used := reader.entries.used; used > 4<<10 {
		t.Fatalf("the entry cache holds %d bytes, over its 4 KiB bound", used)
	}
}
