package leader

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
)

// stagingClient lists objs; DownloadListed writes each to dir but fails the one named bad, and
// Download (a file's own way) counts the files.
type stagingClient struct {
	barrierClient
	dir   string
	objs  []agent.Object
	bad   string
	reads atomic.Int32
	mu    sync.Mutex
	own   []string
	first string // the object whose download read the listing
}

func (c *stagingClient) DownloadListed(_ context.Context, obj agent.Object) ([]agent.Object, []agent.Result, []error, error) {
	c.reads.Add(1)
	c.mu.Lock()
	c.first = obj.Oid
	c.mu.Unlock()
	res, errs := make([]agent.Result, len(c.objs)), make([]error, len(c.objs))
	for i, o := range c.objs {
		if o.Oid == c.bad {
			errs[i] = errors.New("a chunk did not hash to its name")
			continue
		}
		res[i].Path = filepath.Join(c.dir, o.Oid)
		if err := os.WriteFile(res[i].Path, []byte("x"), 0o644); err != nil {
			errs[i] = err
		}
	}
	return c.objs, res, errs, nil
}

func (c *stagingClient) Download(_ context.Context, obj agent.Object, _ func(int64)) (agent.Result, error) {
	c.mu.Lock()
	c.own = append(c.own, obj.Oid)
	c.mu.Unlock()
	return agent.Result{Path: "own"}, nil
}

// The small downloads of a listed batch answer are staged once and handed over as git-lfs asks;
// the first (which started the run) and one that failed go their own way; staged files nobody
// asked for are removed at Close.
func TestStagedDownloads(t *testing.T) {
	dir := t.TempDir()
	objs := lfsObjects(t, t.TempDir(), 30)
	c := &stagingClient{dir: dir, objs: objs, bad: objs[3].Oid}
	l := leadingOver(t, c)
	asked := objs[:20]
	var wg sync.WaitGroup
	got := make([]agent.Result, len(asked))
	errs := make([]error, len(asked))
	for i, o := range asked {
		wg.Go(func() { got[i], errs[i] = l.Download(context.Background(), o, nil) })
	}
	wg.Wait()
	handed := 0
	for i, o := range asked {
		if errs[i] != nil || (got[i].Path != filepath.Join(dir, o.Oid) && got[i].Path != "own") || (o.Oid == c.bad && got[i].Path != "own") {
			t.Errorf("object %d: %+v %v", i, got[i], errs[i])
		}
		if got[i].Path != "own" {
			handed++
		}
	}
	if n := c.reads.Load(); n != 1 {
		t.Errorf("the listing was read %d times", n)
	}
	// The failed one, and the one that started the run, went their own way: one download when the
	// failed one started it (the goroutines race to be first).
	want := []string{c.first, c.bad}
	if c.first == c.bad {
		want = want[:1]
	}
	slices.Sort(want)
	slices.Sort(c.own)
	if !slices.Equal(c.own, want) {
		t.Errorf("downloaded their own way: %v, want the failed one and the first %v", c.own, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != handed {
		t.Errorf("%d files left after Close, want the %d handed over (the others staged removed)", len(left), handed)
	}
}
