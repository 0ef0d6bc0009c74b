package leader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
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
	e, other := "http://cas.example", "http://other.example"
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
		e string
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

// heldTurn is a client.Coordinator whose first download turn of a download naming one of the
// xorbs in block is held, once given, until release is closed (its fetch is slow, say); held is
// closed then.
type heldTurn struct {
	client.Coordinator
	block   map[hash.Hash]bool
	held    chan struct{}
	once    sync.Once
	release chan struct{}
}

func (c *heldTurn) DownloadTurn(ctx context.Context, endpoint string, xorbs []hash.Hash) (func(), error) {
	done, err := c.Coordinator.DownloadTurn(ctx, endpoint, xorbs)
	if err != nil || !c.block[xorbs[0]] {
		return done, err
	}
	first := false
	c.once.Do(func() { first = true })
	if first {
		close(c.held)
		select {
		case <-c.release:
		case <-ctx.Done():
		}
	}
	return done, nil
}

// In the leader of a fetch's agents, downloads that share nothing go side by side: one that holds
// its turn does not hold up an unrelated file. A version of the held file (it shares its xorbs)
// waits for its turn, so that it copies the shared chunks from it instead of fetching them again,
// and both complete once the first goes on.
func TestUnrelatedDownloadsDoNotTakeTurns(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	up := storeLeader(t, zerolog.Nop(), "upload", dir, storeDir, nil)
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

	st, err := store.Open(storeDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	local := embedded.New(st, "")
	fileA, _, err := local.LookupSHA256(ctx, oidHash(t, objs["a"].Oid))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := local.Reconstruct(ctx, fileA, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	held := &heldTurn{block: map[hash.Hash]bool{}, held: make(chan struct{}), release: make(chan struct{})}
	for _, term := range plan.Terms {
		held.block[term.Hash] = true
	}
	l := storeLeader(t, zerolog.Nop(), "download", dir, storeDir, func(co client.Coordinator) client.Coordinator {
		held.Coordinator = co
		return held
	})

	got := map[string]chan error{}
	download := func(name string) {
		got[name] = make(chan error, 1)
		go func() { _, err := l.Download(ctx, objs[name], nil); got[name] <- err }()
	}
	download("a")
	<-held.held // a has its turn, and holds it
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
		l.turns.mu.Lock()
		defer l.turns.mu.Unlock()
		for _, fs := range l.turns.families {
			for _, f := range fs {
				if len(f.waiting) == 1 {
					return true
				}
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
