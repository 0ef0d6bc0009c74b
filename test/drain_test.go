package test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// throttled reads at most rate bytes per second, so that a push is still running when the test
// restarts a server under it, and counts itself in open from its first byte to its end.
type throttled struct {
	io.ReadCloser
	rate  int64
	open  *atomic.Int64 // nil: not counted
	state atomic.Int32  // 0: nothing read, 1: reading, 2: ended (Close may come from another goroutine)
}

func (t *throttled) Read(p []byte) (int, error) {
	if len(p) > 256<<10 {
		p = p[:256<<10]
	}
	n, err := t.ReadCloser.Read(p)
	if n > 0 && t.open != nil && t.state.CompareAndSwap(0, 1) {
		t.open.Add(1)
	}
	if err != nil {
		t.end()
	}
	time.Sleep(time.Duration(int64(n) * int64(time.Second) / t.rate))
	return n, err
}

func (t *throttled) Close() error {
	t.end()
	return t.ReadCloser.Close()
}

func (t *throttled) end() {
	if t.state.Swap(2) == 1 {
		t.open.Add(-1)
	}
}

// balancer is a small load balancer in front of xet-server instances, as an operator's would be:
// it polls each backend's /readyz and sends each request to the next ready one (round robin),
// throttling request bodies to rate bytes per second. A backend that fails its probe gets no new
// requests; requests already sent to it are not moved.
type balancer struct {
	url     string
	mu      sync.Mutex
	ready   []bool
	proxies []*httputil.ReverseProxy
	next    atomic.Uint64
	sent    []atomic.Int64 // requests sent to each backend
	open    atomic.Int64   // request bodies of 1 MiB or more being read (a xorb on its way)
}

func newBalancer(t *testing.T, backends []string, rate int64) *balancer {
	b := &balancer{ready: make([]bool, len(backends)), sent: make([]atomic.Int64, len(backends))}
	for _, be := range backends {
		u, err := url.Parse(be)
		if err != nil {
			t.Fatal(err)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.ErrorLog = nil
		b.proxies = append(b.proxies, p)
	}
	stop := make(chan struct{})
	go b.probe(backends, stop)
	hs := httptest.NewServer(servertest.FullDuplex(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.ContentLength != 0 {
			open := &b.open // a xorb's body, not a batch request's JSON
			if r.ContentLength >= 0 && r.ContentLength < 1<<20 {
				open = nil
			}
			r.Body = &throttled{ReadCloser: r.Body, rate: rate, open: open}
		}
		i, ok := b.pick()
		if !ok {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "no backend ready", http.StatusServiceUnavailable)
			return
		}
		b.sent[i].Add(1)
		b.proxies[i].ServeHTTP(w, r)
	})))
	t.Cleanup(func() { close(stop); hs.Close() })
	b.url = hs.URL
	if !testutil.Eventually(time.Minute, b.allReady) {
		t.Fatal("the balancer's backends were not ready within a minute")
	}
	return b
}

func (b *balancer) probe(backends []string, stop <-chan struct{}) {
	c := &http.Client{Timeout: time.Second}
	for {
		for i, be := range backends {
			res, err := c.Get(be + "/readyz")
			ok := err == nil && res.StatusCode == 200
			if err == nil {
				res.Body.Close()
			}
			b.mu.Lock()
			b.ready[i] = ok
			b.mu.Unlock()
		}
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (b *balancer) allReady() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.ready {
		if !r {
			return false
		}
	}
	return true
}

func (b *balancer) pick() (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range b.ready {
		i := int(b.next.Add(1) % uint64(len(b.ready)))
		if b.ready[i] {
			return i, true
		}
	}
	return 0, false
}

// restart stops a server with SIGTERM (it drains, lets its requests in flight finish or cuts them
// at --shutdown-timeout, exits 0)
// and starts it again on the same address and data.
func restart(t *testing.T, s *xetServerProcess, extra ...string) *xetServerProcess {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("xet-server after SIGTERM: %v\n%s", err, s.log.String())
	}
	return startServerProcess(t, s.addr, s.data, extra...)
}

// pushDuring starts a push of one file of size bytes and, once the server has received requests
// for its xorbs (mid-push), runs during; the push must then succeed.
func pushDuring(t *testing.T, e *env, work string, size int, received func() bool, during func()) {
	t.Helper()
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(size, 36))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "big")
	push, out := startPush(t, e, work)
	if !testutil.Eventually(60*time.Second, received) {
		killPush(push)
		t.Fatalf("the push sent no xorb\n%s", out.String())
	}
	during()
	done := make(chan error, 1)
	go func() { done <- push.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the push across the restart failed: %v\n%s", err, out.String())
		}
	case <-time.After(2 * time.Minute):
		killPush(push)
		t.Fatalf("the push did not finish\n%s", out.String())
	}
}

// waitOpenBody waits until a request body is on its way through lb (a xorb, mid-upload).
func waitOpenBody(t *testing.T, lb *balancer) {
	t.Helper()
	if !testutil.Eventually(30*time.Second, func() bool { return lb.open.Load() > 0 }) {
		t.Fatal("no request body on its way through the balancer")
	}
}

// fsckServer runs xet-server fsck with args and fails unless the store checks clean.
func fsckServer(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "xet-server"), append([]string{"fsck"}, args...)...)
	cmd.Env = append(os.Environ(), serverEnv...)
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "no problems") {
		t.Fatalf("fsck: %v\n%s", err, b)
	}
}

// xet-server restarted with SIGTERM in the middle of a push (one instance): the xorb upload in
// flight finishes (or is cut at --shutdown-timeout and sent again), the agent retries what the draining and then absent server refused, the push
// succeeds, clones, and the store checks clean.
func TestSIGTERMDuringPush(t *testing.T) {
	needLinux(t)
	buildServer(t)
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir())
	lb := newBalancer(t, []string{"http://" + s.addr}, 40<<20)
	e := newEnv(t)
	e.install()
	work, remote := batchRepo(t, e, lb.url+"/team/drain.git/info/lfs")
	var atRestart int64
	pushDuring(t, e, work, 96<<20, func() bool { return lb.sent[0].Load() >= 3 }, func() {
		waitOpenBody(t, lb)
		s = restart(t, s, "--drain-delay", "500ms")
		atRestart = lb.sent[0].Load()
	})
	if after := lb.sent[0].Load(); after <= atRestart {
		t.Fatalf("no request of the push reached the restarted server (%d before, %d after): the restart was not mid-push", atRestart, after)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	fsckServer(t, s.data)
}

// Two instances over one S3 bucket behind a load balancer that follows /readyz: one is restarted
// with SIGTERM during a push. It drains (503 with Retry-After, /readyz failing), the balancer sends
// the retries to the other, the push succeeds, and the bucket checks clean.
func TestSIGTERMOneOfTwoInstancesDuringPush(t *testing.T) {
	needLinux(t)
	buildServer(t)
	s3, servers, urls := s3Pair(t, "--drain-delay", "1s")
	lb := newBalancer(t, urls, 40<<20)
	e := newEnv(t)
	e.install()
	// One xorb upload at a time, so that the push is still sending when the instance drains.
	e.vars = append(e.vars, "GIT_XET_CONCURRENCY=1")
	work, remote := batchRepo(t, e, lb.url+"/team/drain2.git/info/lfs")
	var atSIGTERM int64
	pushDuring(t, e, work, 96<<20, func() bool { return lb.sent[0].Load()+lb.sent[1].Load() >= 4 }, func() {
		waitOpenBody(t, lb)
		atSIGTERM = lb.sent[1].Load()
		servers[0] = restart(t, servers[0], "--storage", s3.URL("cas"), "--secret-file", servers[0].secret, "--drain-delay", "1s")
	})
	if after := lb.sent[1].Load(); after <= atSIGTERM {
		t.Fatalf("no request of the push went to the other instance after the SIGTERM (%d, then %d)", atSIGTERM, after)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	fsckServer(t, "--storage", s3.URL("cas"))
}
