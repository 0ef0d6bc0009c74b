package download_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// planned is a CAS that answers every reconstruction with plan.
type planned struct {
	cas.Client
	plan *casapi.ReconstructionV2
}

func (p *planned) Reconstruct(ctx context.Context, file hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	cp := *p.plan
	return &cp, nil
}

// manyRanges stores n files of size bytes, each in a xorb of its own, and returns their
// concatenation and a CAS planning any file as it: a download of a range of it (not verified as a
// file) fetches n ranges of n xorbs.
func manyRanges(t *testing.T, n, size int) ([]byte, *planned) {
	t.Helper()
	c := embeddedtest.New(t)
	var files [][]byte
	var all []byte
	for i := range n {
		f := testutil.RandomBytes(size, uint64(1000+i))
		files = append(files, f)
		all = append(all, f...)
	}
	plan := &casapi.ReconstructionV2{Xorbs: make(map[hash.Hash][]casapi.XorbFetch)}
	for _, r := range uploadWith(t, upload.Config{CAS: c, Policy: xorb.PolicyNone, SeparateFiles: true}, files...) {
		p, err := c.Reconstruct(context.Background(), r.FileHash, nil)
		if err != nil {
			t.Fatal(err)
		}
		plan.Terms = append(plan.Terms, p.Terms...)
		for x, fs := range p.Xorbs {
			plan.Xorbs[x] = fs
		}
	}
	return all, &planned{Client: c, plan: plan}
}

// scriptedLink is a CAS whose range fetches cross a scripted link in virtual time: the fetches in
// flight go in rounds (each waits until the controller's limit of them are in flight, or, at the
// tail of the file, a moment), and each of a round of k moves its bytes at perByte each, k at a
// time up to the link's capacity: throughput grows with the requests in flight up to the
// capacity, then stays. The controller runs on the link's clock.
type scriptedLink struct {
	cas.Client
	ctl      func() *concurrency.Controller
	capacity int
	perByte  time.Duration

	mu       sync.Mutex
	now      time.Time
	inflight int
	peak     int
}

func (l *scriptedLink) clock() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now
}

func (l *scriptedLink) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	l.mu.Lock()
	l.inflight++
	l.peak = max(l.peak, l.inflight)
	l.mu.Unlock()
	k := 0
	for deadline := time.Now().Add(50 * time.Millisecond); ; time.Sleep(200 * time.Microsecond) {
		l.mu.Lock()
		k = l.inflight
		l.mu.Unlock()
		if k >= l.ctl().Limit() || time.Now().After(deadline) {
			break
		}
	}
	rc, err := l.Client.Fetch(ctx, x, f, r)
	if err != nil {
		l.done(k, 0)
		return nil, err
	}
	return &linkBody{ReadCloser: rc, l: l, k: k}, nil
}

// done ends a fetch of a round of k that moved n bytes: the clock moves by its share of the
// round's time.
func (l *scriptedLink) done(k int, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	l.now = l.now.Add(time.Duration(n) * l.perByte / time.Duration(min(k, l.capacity)))
}

type linkBody struct {
	io.ReadCloser
	l    *scriptedLink
	k    int
	n    int64
	once sync.Once
}

func (b *linkBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *linkBody) Close() error {
	b.once.Do(func() { b.l.done(b.k, b.n) })
	return b.ReadCloser.Close()
}

// Downloads through a link that carries 8 fetches at a time: the ranges in flight grow from 4
// while throughput grows with them, and stop growing at the link's limit (a probe one above it,
// or two when a round at the tail of a window came short).
func TestAdaptGrowsToTheLinksLimit(t *testing.T) {
	data, c := manyRanges(t, 400, 16<<10)
	var ctl *concurrency.Controller
	l := &scriptedLink{Client: c, capacity: 8, perByte: time.Microsecond, now: time.Unix(1_000_000, 0),
		ctl: func() *concurrency.Controller { return ctl }}
	// Latency is not scripted here (the rounds' waits are real time): only throughput counts.
	ctl = concurrency.New(concurrency.Config{Start: 4, Max: 32, LatencyFactor: 1e6, Now: l.clock})
	p := filepath.Join(t.TempDir(), "out.bin")
	err := download.Download(context.Background(), download.Config{CAS: l, Adapt: ctl, Retry: retry.Policy{BaseDelay: time.Millisecond}},
		download.Request{File: hash.Hash{1}, Range: &casapi.ByteRange{Start: 0, End: uint64(len(data) - 1)}, Size: -1, Path: p})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
		t.Fatal("downloaded file differs")
	}
	st := ctl.Stats()
	if st.Peak < 8 || st.Peak > 11 || l.peak > st.Peak || ctl.Limit() < 7 || ctl.Limit() > 11 {
		t.Fatalf("limit peaked at %d and ended at %d (fetches in flight at most %d), stats %+v: want it grown from 4 to the link's 8, and no more than 3 above",
			st.Peak, ctl.Limit(), l.peak, st)
	}
}
