package test

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/s3test"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// s3Pair starts a real S3 server (versitygw) and two xet-server processes over one of its buckets,
// sharing the signing secret; it returns the S3 server, the instances and their base URLs.
func s3Pair(t *testing.T, extra ...string) (*s3test.Server, []*xetServerProcess, []string) {
	t.Helper()
	s3 := s3test.Start(t)
	serverEnv = s3.Env()
	t.Cleanup(func() { serverEnv = nil })
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("6b1f0c2d9e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var servers []*xetServerProcess
	var urls []string
	for range 2 {
		args := append([]string{"--storage", s3.URL("cas"), "--secret-file", secret}, extra...)
		servers = append(servers, startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), args...))
		servers[len(servers)-1].secret = secret
		urls = append(urls, "http://"+servers[len(servers)-1].addr)
	}
	return s3, servers, urls
}

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
	hs := httptest.NewServer(servertest.FullDuplex(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/xorbs/") {
			ranges.Add(1)
		}
		proxies[n.Add(1)%uint64(len(proxies))].ServeHTTP(w, r)
	})))
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
	s3, _, backends := s3Pair(t)
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
	if fs := newBytesOfSecond(t, data, v2); fs != tr.NewBytes {
		t.Errorf("the edited version sent %d new bytes over S3 and %d to a filesystem xet-server: dedupe differs", tr.NewBytes, fs)
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

// newBytesOfSecond pushes v1 then v2 of model.bin to a fresh filesystem xet-server, from a fresh
// HOME, and returns the new bytes the agent sent for v2.
func newBytesOfSecond(t *testing.T, v1, v2 []byte) int64 {
	srv := startServerProcess(t, servertest.FreeAddr(t), t.TempDir())
	e := newEnv(t)
	e.install()
	work, _ := batchRepo(t, e, "http://"+srv.addr+"/team/fs.git/info/lfs")
	for i, data := range [][]byte{v1, v2} {
		writeFile(t, filepath.Join(work, "model.bin"), data)
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", fmt.Sprint(i))
		e.git(work, "push", "-q", "origin", "main")
	}
	var tr transfer
	for _, l := range e.logLines(`"op":"upload"`, oidOf(v2), "transfer complete") {
		tr = parseTransfer(t, l)
	}
	return tr.NewBytes
}

// An instance killed -9 in the middle of a push: the push fails, the same push through the other
// instance succeeds without sending again the xorbs the first accepted, and clones.
func TestS3InstanceKilledMidPush(t *testing.T) {
	needLinux(t)
	buildServer(t)
	s3, servers, _ := s3Pair(t)
	e := newEnv(t)
	e.install()
	// One xorb upload at a time: the kill falls between xorbs, and what is in the bucket is what
	// was stored before it.
	e.vars = append(e.vars, "GIT_XET_CONCURRENCY=1")
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
	if !testutil.Eventually(120*time.Second, func() bool { return xorbs() >= 1 }) {
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
	collectOrphans(t, e, s3, work, remote, xorbs)
}

// collectOrphans leaves orphaned xorbs in the bucket (a push killed -9 after its first xorb, never
// retried), then runs `xet-server gc` twice past a short grace period: the orphans are moved to
// the trash, then deleted, and nothing referenced is; the store checks clean, everything pushed
// clones, and pushing the killed version again stores its xorbs anew.
func collectOrphans(t *testing.T, e *env, s3 *s3test.Server, work, remote string, xorbs func() int) {
	referenced := xorbs()
	writeFile(t, filepath.Join(work, "orphan.bin"), testutil.RandomBytes(150<<20, 62))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "killed")
	push, out := startPush(t, e, work)
	if !testutil.Eventually(120*time.Second, func() bool { return xorbs() > referenced }) {
		killPush(push)
		t.Fatalf("no xorb of the second file reached the bucket\n%s", out.String())
	}
	killPush(push)
	// A xorb whose body had all arrived may still be stored after the kill: count once the
	// bucket is still.
	orphans := xorbs() - referenced
	for range 20 {
		time.Sleep(250 * time.Millisecond)
		n := xorbs() - referenced
		if n == orphans {
			break
		}
		orphans = n
	}
	gc := func() string {
		time.Sleep(2 * time.Second) // past the grace period
		cmd := exec.Command(filepath.Join(binDir, "xet-server"), "gc", "--storage", s3.URL("cas"), "--grace", "1s", "--unsafe-grace")
		cmd.Env = append(os.Environ(), serverEnv...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gc: %v\n%s", err, b)
		}
		t.Logf("gc: %s", b)
		return string(b)
	}
	if rep := gc(); !strings.Contains(rep, fmt.Sprintf("moved to trash %d ", orphans)) {
		t.Fatalf("the first gc did not move the %d orphaned xorbs to the trash", orphans)
	}
	if rep := gc(); !strings.Contains(rep, fmt.Sprintf("deleted from trash %d ", orphans)) {
		t.Fatalf("the second gc did not delete the %d orphaned xorbs", orphans)
	}
	if n := xorbs(); n != referenced {
		t.Fatalf("%d xorbs left after gc, want the %d referenced", n, referenced)
	}
	fsck := exec.Command(filepath.Join(binDir, "xet-server"), "fsck", "--storage", s3.URL("cas"))
	fsck.Env = append(os.Environ(), serverEnv...)
	if b, err := fsck.CombinedOutput(); err != nil || !strings.Contains(string(b), "no problems") {
		t.Fatalf("fsck after gc: %v\n%s", err, b)
	}
	e.git(work, "push", "-q", "origin", "main")
	clone := filepath.Join(e.home, "clone-after-gc")
	e.git("", "clone", "-q", remote, clone)
	if n := sameTree(t, work, clone); n != 4 { // big.bin, orphan.bin, .gitattributes, .lfsconfig
		t.Fatalf("compared %d files after gc, want 4", n)
	}
}

// Two gc loops (a 1 s grace period) racing each other while 3 pushers push new versions in a loop for 60 s
// through two instances over one bucket: every push succeeds, every version of every repository
// clones byte-identical, and the store checks clean. Versions share a block, so pushes dedupe
// against each other's xorbs while gc moves and deletes what is not yet referenced.
func TestGCDuringPushes(t *testing.T) {
	needLinux(t)
	buildServer(t)
	s3, _, backends := s3Pair(t)
	var ranges atomic.Int64
	lb := roundRobin(t, backends, &ranges)
	e := newEnv(t)
	e.install()
	shared := testutil.RandomBytes(3<<20, 70)
	type pusher struct{ work, remote string }
	var pushers []pusher
	for i := range 3 {
		work, remote := e.localRepo(repoOpts{
			work:   filepath.Join(e.home, fmt.Sprintf("work%d", i)),
			remote: filepath.Join(e.home, fmt.Sprintf("remote%d.git", i)),
			lfsURL: fmt.Sprintf("%s/team/gc%d.git/info/lfs", lb, i),
		})
		pushers = append(pushers, pusher{work, remote})
	}
	// The loops go on until every pusher pushed wantVersions versions and gc ran wantGCs times in
	// all, racing them, or for 60 s at most on a slow machine.
	const wantVersions, wantGCs = 12, 24
	limit := time.Now().Add(60 * time.Second)
	var pushes, gcs atomic.Int64
	var pushed [3]atomic.Int64
	enough := func() bool {
		for i := range pushed {
			if pushed[i].Load() < wantVersions {
				return false
			}
		}
		return gcs.Load() >= wantGCs
	}
	stop := func() bool { return enough() || time.Now().After(limit) }
	errs := make(chan error, 5)
	for i, p := range pushers {
		go func() {
			errs <- pushLoop(e, p.work, i, shared, stop, &pushes, &pushed[i])
		}()
	}
	var gcOut [2]strings.Builder
	for i := range gcOut { // two gc loops, racing each other as well as the pushes
		go func() {
			errs <- gcLoop(s3, stop, &gcs, &gcOut[i])
		}()
	}
	for range 5 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d pushes and %d gc runs; gc moved/deleted/restored %s xorbs; %d uploads sent again because gc had removed their xorbs",
		pushes.Load(), gcs.Load(), gcOut[0].String()+" and "+gcOut[1].String(), len(e.logLines("the remote lacks xorbs the shard names")))
	if t.Failed() {
		return
	}
	if pushes.Load() < 6 || gcs.Load() < 5 {
		t.Fatalf("%d pushes and %d gc runs: too few to show anything", pushes.Load(), gcs.Load())
	}
	for i, p := range pushers {
		clone := filepath.Join(e.home, fmt.Sprintf("clone%d", i))
		e.git("", "clone", "-q", p.remote, clone)
		sameTree(t, p.work, clone)
	}
	fsck := exec.Command(filepath.Join(binDir, "xet-server"), "fsck", "--storage", s3.URL("cas"))
	fsck.Env = append(os.Environ(), serverEnv...)
	if b, err := fsck.CombinedOutput(); err != nil || !strings.Contains(string(b), "no problems") {
		t.Fatalf("fsck after the pushes and gc: %v\n%s", err, b)
	}
}

// pushLoop adds a version (a new file: the shared block, then its own bytes) and pushes it, until
// stop says so; pushes counts every pusher's versions, mine this one's.
func pushLoop(e *env, work string, id int, shared []byte, stop func() bool, pushes, mine *atomic.Int64) error {
	for v := 0; !stop(); v++ {
		data := append(append([]byte(nil), shared...), testutil.RandomBytes(2<<20+v*4096, uint64(1000*id+v))...)
		if err := os.WriteFile(filepath.Join(work, fmt.Sprintf("v%03d.bin", v)), data, 0o644); err != nil {
			return err
		}
		for _, args := range [][]string{{"add", "."}, {"commit", "-q", "-m", fmt.Sprint(v)}, {"push", "-q", "origin", "main"}} {
			if out, err := e.cmd(work, "git", args...).CombinedOutput(); err != nil {
				return fmt.Errorf("pusher %d, version %d: git %s: %v\n%s", id, v, args[0], err, out)
			}
		}
		pushes.Add(1)
		mine.Add(1)
	}
	return nil
}

var gcReport = regexp.MustCompile(`moved to trash (\d+) .* deleted from trash (\d+) .* restored from trash (\d+)`)

// gcLoop runs `xet-server gc` with a 1 s grace period, back to back, until stop says so, and sums
// the lines of its reports that moved, deleted or restored anything.
func gcLoop(s3 *s3test.Server, stop func() bool, runs *atomic.Int64, out *strings.Builder) error {
	var trashed, deleted, restored int
	for !stop() {
		cmd := exec.Command(filepath.Join(binDir, "xet-server"), "gc", "--storage", s3.URL("cas"), "--grace", "1s", "--unsafe-grace")
		cmd.Env = append(os.Environ(), serverEnv...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("gc: %v\n%s", err, b)
		}
		if m := gcReport.FindStringSubmatch(string(b)); m != nil {
			tr, _ := strconv.Atoi(m[1])
			d, _ := strconv.Atoi(m[2])
			r, _ := strconv.Atoi(m[3])
			trashed, deleted, restored = trashed+tr, deleted+d, restored+r
		}
		runs.Add(1)
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Fprintf(out, "%d/%d/%d", trashed, deleted, restored)
	return nil
}
