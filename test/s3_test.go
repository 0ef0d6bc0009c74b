package test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/s3test"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// roundRobin is a load balancer in front of backends: each request goes to the next one. It counts
// the requests for signed xorb ranges (/xorbs/) in *ranges.
func roundRobin(t *testing.T, backends []string, ranges *atomic.Int64) string {
	var n atomic.Uint64
	var proxies []*httputil.ReverseProxy
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		proxies = append(proxies, httputil.NewSingleHostReverseProxy(u))
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/xorbs/") {
			ranges.Add(1)
		}
		proxies[n.Add(1)%uint64(len(proxies))].ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// Two xet-server processes over one S3 bucket (a real S3 server, versitygw), sharing only the
// bucket and the signing secret, behind a round-robin load balancer: every request of a push or a
// clone may reach either, so a token, a signed URL or an upload of one is good at the other at
// once. A push clones (the xorb ranges fetched straight from the bucket with presigned URLs), and
// an edited version sends only its changed chunks.
func TestTwoServersOneBucket(t *testing.T) {
	buildServer(t)
	s3 := s3test.Start(t)
	serverEnv = s3.Env()
	t.Cleanup(func() { serverEnv = nil })
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("6b1f0c2d9e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var backends []string
	for range 2 {
		addr := freeAddr(t)
		startServerProcess(t, addr, t.TempDir(), "--storage", s3.URL("cas"), "--secret-file", secret)
		backends = append(backends, "http://"+addr)
	}
	e := newEnv(t)
	e.install()
	var viaServer atomic.Int64
	work, remote := batchRepo(t, e, roundRobin(t, backends, &viaServer)+"/team/s3.git/info/lfs")
	data := testutil.RandomBytes(24<<20, 51)
	writeFile(t, filepath.Join(work, "model.bin"), data)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	e.git(work, "push", "-q", "origin", "main")
	clone := filepath.Join(e.home, "clone-1")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)

	v2 := editScattered(data, 4, 64<<10, 52)
	writeFile(t, filepath.Join(work, "model.bin"), v2)
	e.git(work, "commit", "-q", "-am", "v2")
	e.git(work, "push", "-q", "origin", "main")
	var tr transfer
	for _, l := range e.logLines(`"op":"upload"`, oidOf(v2), "transfer complete") {
		tr = parseTransfer(t, l)
	}
	if tr.NewBytes == 0 || tr.NewBytes > int64(len(v2))/10 {
		t.Errorf("the edited version sent %d new bytes of %d", tr.NewBytes, len(v2))
	}
	clone = filepath.Join(e.home, "clone-2")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	if n := viaServer.Load(); n != 0 {
		t.Errorf("%d xorb range requests went through the servers; with presigned URLs they go to the bucket", n)
	}
	if n, err := os.ReadDir(filepath.Join(s3.Dir, s3.Bucket, "cas", "xorbs")); err != nil || len(n) == 0 {
		t.Errorf("no xorbs in the bucket: %v", err)
	}
}

// An instance killed -9 in the middle of a push: the push fails, the same push through the other
// instance succeeds without sending again the xorbs the first accepted, and clones.
func TestS3InstanceKilledMidPush(t *testing.T) {
	needLinux(t)
	buildServer(t)
	s3 := s3test.Start(t)
	serverEnv = s3.Env()
	t.Cleanup(func() { serverEnv = nil })
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var servers []*xetServerProcess
	for range 2 {
		servers = append(servers, startServerProcess(t, freeAddr(t), t.TempDir(), "--storage", s3.URL("cas"), "--secret-file", secret))
	}
	e := newEnv(t)
	e.install()
	work, remote := batchRepo(t, e, "http://"+servers[0].addr+"/team/kill.git/info/lfs")
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(200<<20, 61)) // four xorbs
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "big")
	push := e.cmd(work, "git", "push", "-q", "origin", "main")
	var out strings.Builder
	push.Stdout, push.Stderr = &out, &out
	if err := push.Start(); err != nil {
		t.Fatal(err)
	}
	xorbs := func() int {
		n := 0
		filepath.WalkDir(filepath.Join(s3.Dir, s3.Bucket, "cas", "xorbs"), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	if !waitFor(120*time.Second, func() bool { return xorbs() >= 1 }) {
		push.Process.Kill()
		push.Wait()
		t.Fatalf("no xorb reached the bucket\n%s", out.String())
	}
	servers[0].cmd.Process.Kill()
	servers[0].cmd.Wait()
	if err := push.Wait(); err == nil {
		t.Fatalf("the push survived its server's death\n%s", out.String())
	}
	before := xorbs()
	writeFile(t, filepath.Join(work, ".lfsconfig"), []byte("[lfs]\n\turl = http://"+servers[1].addr+"/team/kill.git/info/lfs\n\tlocksverify = false\n"))
	e.git(work, "commit", "-q", "-am", "the other instance")
	e.git(work, "push", "-q", "origin", "main")
	skipped := len(e.logLines("xorb already stored (an interrupted upload resumed)"))
	t.Logf("%d xorbs in the bucket at the kill; the second push did not send %d of them", before, skipped)
	if skipped < before {
		t.Errorf("the second push sent again xorbs the killed instance had stored (%d of %d not sent)", skipped, before)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
}
