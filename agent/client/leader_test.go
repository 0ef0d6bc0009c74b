package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// leaderOver returns a leading upload Transferer whose local remote (in a temp dir) is found by
// find instead of git.
func leaderOver(t *testing.T, find func(ctx context.Context) error) (dir string, x *xetTransferer) {
	t.Helper()
	dir = t.TempDir()
	remote := filepath.Join(dir, "remote.git")
	open := New(Options{Log: zerolog.Nop(), Git: Git{Dir: dir}, Cache: CacheOptions{Root: filepath.Join(dir, "cache")}})
	tr, err := open(context.Background(), agent.Init{Operation: "upload", Remote: "origin", ConcurrentTransfers: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	x = tr.(*xetTransferer)
	x.findRemote = func(ctx context.Context, g Git, op, r string) (LocalRemote, error) {
		if err := find(ctx); err != nil {
			return LocalRemote{}, err
		}
		return LocalRemote{URL: remote, RepoDir: remote}, nil
	}
	x.gitDir.Set(filepath.Join(dir, ".git")) // no git repository here: a local remote
	x.endpoint.Set(gitrepo.Endpoint{LocalDir: remote})
	x.sharing.leading.Store(true)
	return dir, x
}

// A leader serving 8 conversations whose remote takes a second to resolve serves all of them in
// about that second: the conversations wait for one resolution, not in turn for a lock, and each
// gets its upload done.
func TestLeaderServesConversationsDuringSlowResolution(t *testing.T) {
	var calls atomic.Int32
	dir, x := leaderOver(t, func(ctx context.Context) error {
		calls.Add(1)
		time.Sleep(time.Second)
		return nil
	})
	const n = 8
	outs := make([]strings.Builder, n)
	outcomes := make([]share.Outcome, n)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range n {
		data := testutil.RandomBytes(3000+i, uint64(40+i))
		name := fmt.Sprintf("obj%d", i)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		req := fmt.Sprintf(`{"event":"upload","oid":%q,"size":%d,"path":%q}`+"\n"+`{"event":"terminate"}`+"\n", hex.EncodeToString(sum[:]), len(data), name)
		wg.Go(func() {
			outcomes[i] = x.servePipe(context.Background(), &share.Pipe{In: strings.NewReader(req), Out: &outs[i], Dir: dir, Pid: 100 + i})
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	for i := range n {
		if !outcomes[i].Exit || outcomes[i].Err != "" || !strings.Contains(outs[i].String(), `"event":"complete"`) || strings.Contains(outs[i].String(), `"error"`) {
			t.Fatalf("conversation %d: outcome %+v, answers %s", i, outcomes[i], outs[i].String())
		}
	}
	t.Logf("8 conversations served in %v with %d resolution(s) of 1 s", elapsed, calls.Load())
	if calls.Load() != 1 {
		t.Errorf("the remote was resolved %d times, want once for the process", calls.Load())
	}
	if elapsed > 4*time.Second {
		t.Errorf("8 conversations took %v behind a 1 s resolution: they waited in turn", elapsed)
	}
}

// While the remote's resolution blocks, a request that needs something else (a batch action's CAS
// endpoint) is served: nothing holds a lock across the resolution.
func TestNoLockAcrossResolution(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	_, x := leaderOver(t, func(ctx context.Context) error {
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
