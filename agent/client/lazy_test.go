package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// slowRemote returns an upload Client whose local remote (in a temp dir) is found by find instead
// of git.
func slowRemote(t *testing.T, find func(ctx context.Context) error) (dir string, x *Client) {
	t.Helper()
	dir = t.TempDir()
	remote := filepath.Join(dir, "remote.git")
	x = Open(Options{Log: zerolog.Nop(), Git: Git{Dir: dir}, Cache: CacheOptions{Root: filepath.Join(dir, "cache")}},
		agent.Init{Operation: "upload", Remote: "origin", ConcurrentTransfers: 8}, nil)
	t.Cleanup(func() { x.Close() })
	x.findRemote = func(ctx context.Context, g Git, op, r string) (LocalRemote, error) {
		if err := find(ctx); err != nil {
			return LocalRemote{}, err
		}
		return LocalRemote{URL: remote, RepoDir: remote}, nil
	}
	x.gitDir.Set(filepath.Join(dir, ".git")) // no git repository here: a local remote
	x.lfsDir.Set(filepath.Join(dir, ".git", "lfs"))
	x.endpoint.Set(gitrepo.Endpoint{LocalDir: remote})
	return dir, x
}

// 8 uploads at once (a leader serving 8 conversations) whose remote takes a second to resolve are
// all done in about that second: they wait for one resolution, not in turn for a lock, and each
// gets its upload done.
func TestUploadsShareOneSlowResolution(t *testing.T) {
	var calls atomic.Int32
	dir, x := slowRemote(t, func(ctx context.Context) error {
		calls.Add(1)
		time.Sleep(time.Second)
		return nil
	})
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range n {
		data := testutil.RandomBytes(3000+i, uint64(40+i))
		path := filepath.Join(dir, fmt.Sprintf("obj%d", i))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		wg.Go(func() {
			_, errs[i] = x.Upload(context.Background(), agent.Object{Oid: hex.EncodeToString(sum[:]), Size: int64(len(data)), Path: path}, nil)
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
	}
	t.Logf("8 uploads done in %v with %d resolution(s) of 1 s", elapsed, calls.Load())
	if calls.Load() != 1 {
		t.Errorf("the remote was resolved %d times, want once for the process", calls.Load())
	}
	if elapsed > 4*time.Second {
		t.Errorf("8 uploads took %v behind a 1 s resolution: they waited in turn", elapsed)
	}
}

// While the remote's resolution blocks, a request that needs something else (a batch action's CAS
// endpoint) is served: nothing holds a lock across the resolution.
func TestNoLockAcrossResolution(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	_, x := slowRemote(t, func(ctx context.Context) error {
		close(started)
		<-release
		return nil
	})
	go x.localRemote(context.Background())
	<-started
	done := make(chan *endpoint)
	go func() {
		ba, err := lfsbatch.ParseXetAction(&lfsbatch.Action{Href: "http://127.0.0.1:1/token",
			Header: map[string]string{lfsbatch.HeaderCasURL: "http://127.0.0.1:1", lfsbatch.HeaderAccessToken: "t"}})
		if err != nil {
			t.Error(err)
		}
		done <- x.batchEndpoint(context.Background(), ba)
	}()
	select {
	case e := <-done:
		if e == nil || e.where != "http://127.0.0.1:1" {
			t.Errorf("batch endpoint %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a batch endpoint waited for the remote's resolution")
	}
	close(release)
	if _, err := x.localRemote(context.Background()); err != nil {
		t.Fatal(err)
	}
}
