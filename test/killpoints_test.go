package test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// holdProxy forwards to a server and holds the first request that match selects: its request
// body after reqAt bytes, or its answer's body after respAt bytes (-1: not that side). held is
// closed once it holds; what it holds is let go (letGo) after the kill, or at the end of the test.
type holdProxy struct {
	rp            *httputil.ReverseProxy
	match         func(*http.Request) bool
	reqAt, respAt int64
	once          sync.Once
	held, release chan struct{}
	releaseOnce   sync.Once
}

// letGo fails what the proxy holds, as a proxy whose client went away would: the server sees the
// request body (or its answer's reader) break off.
func (p *holdProxy) letGo() { p.releaseOnce.Do(func() { close(p.release) }) }

func newHoldProxy(t *testing.T, backend string, match func(*http.Request) bool, reqAt, respAt int64) (*holdProxy, string) {
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{rp: httputil.NewSingleHostReverseProxy(u), match: match, reqAt: reqAt, respAt: respAt,
		held: make(chan struct{}), release: make(chan struct{})}
	p.rp.ModifyResponse = func(resp *http.Response) error {
		if h, ok := resp.Request.Context().Value(holdKey{}).(bool); ok && h && p.respAt >= 0 {
			resp.Body = &holdingReader{ReadCloser: resp.Body, left: p.respAt, p: p}
		}
		return nil
	}
	hs := httptest.NewServer(servertest.FullDuplex(p))
	t.Cleanup(func() { p.letGo(); hs.Close() })
	return p, hs.URL
}

type holdKey struct{}

func (p *holdProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	chosen := false
	if p.match(r) {
		p.once.Do(func() { chosen = true })
	}
	if chosen && p.reqAt >= 0 {
		r.Body = &holdingReader{ReadCloser: r.Body, left: p.reqAt, p: p}
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), holdKey{}, chosen)))
}

// holdingReader passes left bytes, then blocks until the proxy lets go.
type holdingReader struct {
	io.ReadCloser
	left int64
	p    *holdProxy
}

func (h *holdingReader) Read(b []byte) (int, error) {
	if h.left <= 0 {
		close(h.p.held)
		<-h.p.release
		return 0, io.ErrUnexpectedEOF
	}
	n, err := h.ReadCloser.Read(b[:min(int64(len(b)), h.left)])
	h.left -= int64(n)
	return n, err
}

func isXorbPut(r *http.Request) bool {
	return r.Method == "POST" && strings.HasPrefix(r.URL.Path, "/v1/xorbs/")
}
func isShardPut(r *http.Request) bool {
	return r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/shards")
}
func isXorbGet(r *http.Request) bool {
	return r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/xorbs/")
}

// isLongXorbGet is a xorb GET of a range over 4 MiB: a download's data, not the footer it reads
// first to split a term into ranges.
func isLongXorbGet(r *http.Request) bool {
	if !isXorbGet(r) {
		return false
	}
	rng := r.Header.Get("Range")
	if rng == "" {
		return true // the whole object
	}
	var a, b int64
	if _, err := fmt.Sscanf(rng, "bytes=%d-%d", &a, &b); err != nil {
		return false // a suffix (the footer's) or an open range
	}
	return b-a+1 > 4<<20
}

// The agent killed -9 at each point of a push (before its first xorb is sent, half-way through a
// xorb, between its xorbs and its shard, after the shard is registered but before `complete`) and
// of a download: the command fails, the same command again succeeds, the files compare equal,
// the server's store checks clean with nothing in its temp directory, and the clone's
// .git/lfs/tmp holds nothing of ours.
func TestAgentKilledAtEachPoint(t *testing.T) {
	needLinux(t)
	for _, c := range []struct {
		name          string
		match         func(*http.Request) bool
		reqAt, respAt int64
		download      bool
	}{
		{"before the first xorb", isXorbPut, 0, -1, false},
		{"mid-xorb", isXorbPut, 32 << 20, -1, false},
		{"between xorbs and shard", isShardPut, 0, -1, false},
		{"after the shard, before complete", isShardPut, -1, 0, false},
		{"during a download", isLongXorbGet, -1, 4 << 20, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.install()
			srv := startServer(t, "")
			p, front := newHoldProxy(t, srv.url, c.match, c.reqAt, c.respAt)
			work, remote := batchRepo(t, e, front+"/team/kill.git/info/lfs")
			writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(150<<20, 91))
			e.git(work, "add", ".")
			e.git(work, "commit", "-q", "-m", "x")
			dir := work
			var cmd func() error
			if c.download {
				e.git(work, "push", "-q", "origin", "main")
				dir = filepath.Join(e.home, "clone")
				pull, out := e.startPull(remote, dir)
				cmd = func() error {
					err := pull.Wait()
					t.Logf("killed pull: %v\n%s", err, lastLines(out.String(), 3))
					return err
				}
			} else {
				push, out := startPush(t, e, work)
				cmd = func() error {
					err := push.Wait()
					t.Logf("killed push: %v\n%s", err, lastLines(out.String(), 3))
					return err
				}
			}
			killAt(t, p, dir, cmd)
			if dir == work {
				e.git(work, "push", "-q", "origin", "main")
				dir = filepath.Join(e.home, "clone")
				e.git("", "clone", "-q", remote, dir)
			} else {
				e.git(dir, "lfs", "pull")
			}
			sameTree(t, work, dir)
			afterKill(t, srv.data, dir)
		})
	}
}

// killAt waits until the proxy holds, kills the agents working in dir with -9, and checks that
// the command (waited for by wait) failed.
func killAt(t *testing.T, p *holdProxy, dir string, wait func() error) {
	t.Helper()
	select {
	case <-p.held:
	case <-time.After(2 * time.Minute):
		t.Fatal("the proxy never held the request")
	}
	pids := agentPIDs(dir)
	for _, pid := range pids {
		killProcess(pid)
	}
	if len(pids) == 0 {
		t.Fatal("no agent to kill")
	}
	if err := wait(); err == nil {
		t.Fatal("the command succeeded although its agents were killed")
	}
	// The server streams a large xorb upload into a temp file as it arrives: the held one must
	// break off, as it would behind a real proxy, for its temp file to go.
	p.letGo()
}

// afterKill: the store checks clean, with nothing in its temp directory, and the repository's
// .git/lfs/tmp holds no file of the agent's.
func afterKill(t *testing.T, data, repo string) {
	t.Helper()
	report, ok, err := store.Fsck(context.Background(), data, store.FsckOptions{})
	if err != nil || !ok || !strings.Contains(report, " 0 temp files") {
		t.Errorf("store check: %v\n%s", err, report)
	}
	ents, _ := os.ReadDir(filepath.Join(repo, ".git", "lfs", "tmp"))
	for _, en := range ents {
		if strings.Contains(en.Name(), "xet") {
			t.Errorf("left in .git/lfs/tmp: %s", en.Name())
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
