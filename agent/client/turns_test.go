package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// Related uploads to one endpoint take turns, the oldest file first among those waiting; a waiter
// whose context ends leaves the queue; an unrelated file and another endpoint do not wait.
func TestTurnsOldestFirst(t *testing.T) {
	dir := t.TempDir()
	path := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		mt := time.Now().Add(-age)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var tr turns
	e, other := &endpoint{}, &endpoint{}
	kin := sample{hash.Chunk([]byte("shared")): {}}
	stranger := sample{hash.Chunk([]byte("other")): {}}
	ctx := context.Background()
	first, err := tr.take(ctx, e, path("now", 0), kin)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	waiting := func(n int) bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.families[e]) > 0 && len(tr.families[e][0].waiting) == n
	}
	for i, f := range []struct {
		name string
		age  time.Duration
	}{{"v3", time.Hour}, {"v1", 3 * time.Hour}, {"v2", 2 * time.Hour}} {
		p := path(f.name, f.age)
		wg.Go(func() {
			done, err := tr.take(ctx, e, p, kin)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, f.name)
			mu.Unlock()
			done()
		})
		if !testutil.Eventually(10*time.Second, func() bool { return waiting(i + 1) }) {
			t.Fatalf("%s does not wait for its turn", f.name)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error)
	go func() { _, err := tr.take(cctx, e, path("v0", 4*time.Hour), kin); gone <- err }()
	if !testutil.Eventually(10*time.Second, func() bool { return waiting(4) }) {
		t.Fatal("v0 does not wait for its turn")
	}
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	for _, o := range []struct {
		e *endpoint
		s sample
	}{{other, kin}, {e, stranger}} {
		done, err := tr.take(ctx, o.e, path("elsewhere", 0), o.s)
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
	first()
	wg.Wait()
	if want := []string{"v1", "v2", "v3"}; len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("turns in order %v, want %v", order, want)
	}
	if len(tr.families[e]) != 0 {
		t.Fatalf("%d families left after every turn ended", len(tr.families[e]))
	}
}

// blockingCAS holds the fetches of the xorbs in block until release is closed, and says when one
// is held (held).
type blockingCAS struct {
	cas.Client
	block   map[hash.Hash]bool
	held    chan struct{}
	once    sync.Once
	release chan struct{}
}

func (c *blockingCAS) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	if c.block[x] {
		c.once.Do(func() { close(c.held) })
		select {
		case <-c.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.Client.Fetch(ctx, x, f, r)
}

// In the leader of a fetch's agents, downloads that share nothing go side by side: one whose
// fetch is held up does not hold up an unrelated file. A version of the held file (it shares its
// xorbs) waits for its turn, so that it copies the shared chunks from it instead of fetching them
// again, and both complete once the fetch goes on.
func TestUnrelatedDownloadsDoNotTakeTurns(t *testing.T) {
	dir, storeDir, up := storeTransferer(t, zerolog.Nop())
	ctx := context.Background()
	a := testutil.RandomBytes(4<<20, 61)
	a2 := append([]byte(nil), a...)
	copy(a2[2<<20:], testutil.RandomBytes(64<<10, 62)) // a version of a: one edit
	b := testutil.RandomBytes(4<<20, 63)
	objs := map[string]agent.Object{}
	for name, data := range map[string][]byte{"a": a, "a2": a2, "b": b} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		objs[name] = agent.Object{Oid: hex.EncodeToString(sum[:]), Size: int64(len(data))}
		if _, err := up.Upload(ctx, agent.Object{Oid: objs[name].Oid, Size: objs[name].Size, Path: p}, nil); err != nil {
			t.Fatal(err)
		}
	}
	up.Close()

	open := New(Options{Log: zerolog.Nop(), Git: Git{Dir: dir}, StoreDir: func() string { return storeDir }})
	tr, err := open(ctx, agent.Init{Operation: "download", Remote: "origin", ConcurrentTransfers: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	x := tr.(*xetTransferer)
	x.gitDir.Set(filepath.Join(dir, ".git"))
	x.sharing.leading.Store(true)
	st, err := store.Open(storeDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	local := embedded.New(st, "")
	sha, _ := oidBytes(objs["a"].Oid)
	fileA, _, err := local.LookupSHA256(ctx, hash.FromSHA256(sha))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := local.Reconstruct(ctx, fileA, nil)
	if err != nil {
		t.Fatal(err)
	}
	held := &blockingCAS{Client: local, block: map[hash.Hash]bool{}, held: make(chan struct{}), release: make(chan struct{})}
	for _, term := range plan.Terms {
		held.block[term.Hash] = true
	}
	e := &endpoint{mode: agent.ModeEmbedded, cas: held, local: local, where: storeDir}
	x.endpoints.Get(ctx, storeDir, func(context.Context) (*endpoint, error) { return e, nil })

	got := map[string]chan error{}
	download := func(name string) {
		got[name] = make(chan error, 1)
		go func() { _, err := tr.Download(ctx, objs[name], nil); got[name] <- err }()
	}
	download("a")
	<-held.held // a has its turn, and its fetch is held up
	download("a2")
	download("b")
	select {
	case err := <-got["b"]:
		if err != nil {
			t.Fatalf("the unrelated download: %v", err)
		}
	case <-time.After(30 * time.Second):
		close(held.release)
		t.Fatal("an unrelated download waited for a download it shares nothing with")
	}
	if !testutil.Eventually(30*time.Second, func() bool {
		x.sharing.turns.mu.Lock()
		defer x.sharing.turns.mu.Unlock()
		for _, f := range x.sharing.turns.families[e] {
			if len(f.waiting) == 1 {
				return true
			}
		}
		return false
	}) {
		t.Error("the version of the held file did not wait for its turn")
	}
	close(held.release)
	for _, name := range []string{"a", "a2"} {
		if err := <-got[name]; err != nil {
			t.Fatalf("download %s: %v", name, err)
		}
	}
}
