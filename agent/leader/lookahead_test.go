package leader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// listingClient is a targetClient whose actions name a listing of listed; reads counts the
// listings read, and failFirst fails the first batch.
type listingClient struct {
	targetClient
	listed    []agent.Object
	reads     atomic.Int32
	failFirst bool
	failed    atomic.Bool
}

func (c *listingClient) BatchListing(context.Context, agent.Object) ([]agent.Object, error) {
	c.reads.Add(1)
	return c.listed, nil
}

func (c *listingClient) UploadBatch(ctx context.Context, objs []agent.Object) ([]agent.Result, []error, error) {
	if c.failFirst && c.failed.CompareAndSwap(false, true) {
		return nil, nil, errors.New("the quota is full")
	}
	return c.targetClient.UploadBatch(ctx, objs)
}

// lfsObjects writes n small objects into a git-lfs object store under dir and returns them as a
// batch answer's objects, each with an action naming one listing.
func lfsObjects(t *testing.T, dir string, n int) []agent.Object {
	t.Helper()
	action := &lfsbatch.Action{Href: "http://lfs", Header: map[string]string{lfsbatch.HeaderBatchURL: "http://cas/v1/batches/1"}}
	var objs []agent.Object
	for i := range n {
		data := fmt.Appendf(nil, "small object %d", i)
		sum := sha256.Sum256(data)
		oid := hex.EncodeToString(sum[:])
		p := filepath.Join(dir, "netA", oid[:2], oid[2:4], oid)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, agent.Object{Oid: oid, Size: int64(len(data)), Path: p, Action: action})
	}
	return objs
}

// uploadAll uploads objs through l, 8 at a time as git-lfs's default transfers do.
func uploadAll(l *Leader, objs []agent.Object) []error {
	errs := make([]error, len(objs))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, o := range objs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, errs[i] = l.Upload(context.Background(), o, nil)
		})
	}
	wg.Wait()
	return errs
}

func leadingOver(t *testing.T, c Client) *Leader {
	t.Helper()
	open := New(Options{Log: zerolog.Nop()}, func(agent.Init, client.Coordinator) Client { return c })
	tr, err := open(context.Background(), agent.Init{Operation: "upload", Remote: "origin", ConcurrentTransfers: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	l := tr.(*Leader)
	l.leading.Store(true)
	return l
}

// The small objects of a batch answer whose server lists it go in one batch however few git-lfs
// hands at once (8 here): the listing read once; a listed file missing from the object store, or
// whose bytes are not its oid, is left out and goes its own way.
func TestLookaheadStoresTheWholeBatchAnswer(t *testing.T) {
	objs := lfsObjects(t, t.TempDir(), 100)
	if err := os.Remove(objs[7].Path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(objs[9].Path, []byte("other bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &listingClient{listed: objs}
	l := leadingOver(t, c)
	for i, err := range uploadAll(l, objs) {
		if err != nil {
			t.Errorf("object %d: %v", i, err)
		}
	}
	if n := c.reads.Load(); n != 1 {
		t.Errorf("the listing was read %d times, want once", n)
	}
	if len(c.batches) == 0 || len(c.batches[0]) != 98 {
		t.Fatalf("batches %d, the first of %d files; want the 98 good files in one", len(c.batches), len(c.batches[0]))
	}
	for _, o := range c.batches[0] {
		if o.Oid == objs[7].Oid || o.Oid == objs[9].Oid {
			t.Errorf("the bad file %s was in the listing's batch", o.Oid)
		}
	}
	var rest []string
	for _, b := range c.batches[1:] {
		for _, o := range b {
			rest = append(rest, o.Oid)
		}
	}
	slices.Sort(rest)
	want := []string{objs[7].Oid, objs[9].Oid}
	slices.Sort(want)
	if !slices.Equal(rest, want) {
		t.Errorf("uploaded on their own: %v, want the two bad files", rest)
	}
}

// When the listing's batch fails, each of its files goes its own way (and reports its own error).
func TestLookaheadFailedBatchSendsEachItsOwnWay(t *testing.T) {
	objs := lfsObjects(t, t.TempDir(), 20)
	c := &listingClient{listed: objs, failFirst: true}
	l := leadingOver(t, c)
	for i, err := range uploadAll(l, objs) {
		if err != nil {
			t.Errorf("object %d: %v", i, err)
		}
	}
	n := 0
	for _, b := range c.batches {
		n += len(b)
	}
	if n != len(objs) {
		t.Errorf("%d files stored after the listing's batch failed, want %d", n, len(objs))
	}
}

// A path not in git-lfs's object store shape reads no listing.
func TestLookaheadNeedsTheObjectStoreShape(t *testing.T) {
	for _, p := range []string{"obj", "/x/ab/cd/" + fmt.Sprintf("%064x", 1), "/x/00/00/" + fmt.Sprintf("%064x", 2)} {
		if _, ok := objectsDir(p, fmt.Sprintf("%064x", 1)); ok {
			t.Errorf("%s taken for an object store path", p)
		}
	}
	if d, ok := objectsDir("/lfs/objects/00/00/"+fmt.Sprintf("%064x", 1), fmt.Sprintf("%064x", 1)); !ok || d != "/lfs/objects" {
		t.Errorf("objects dir %q %v", d, ok)
	}
}
