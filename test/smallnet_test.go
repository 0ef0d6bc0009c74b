package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/s3test"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
)

// casCounts counts the xorb uploads and shard registrations a CAS answered, and the
// reconstructions and xorb range fetches (GET) it served.
type casCounts struct{ xorbs, shards, plans, fetches atomic.Int64 }

// countingServer serves h (xet-server's handler, or a proxy to one) on loopback and counts its xorb
// uploads (POST …/xorbs/…) and shard registrations (POST …/shards).
func countingServer(t *testing.T, h http.Handler) (*httptest.Server, *casCounts) {
	t.Helper()
	c := &casCounts{}
	hs := httptest.NewServer(servertest.FullDuplex(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/xorbs/"):
			c.xorbs.Add(1)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/shards"):
			c.shards.Add(1)
		case r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/reconstructions/"):
			c.plans.Add(1)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/xorbs/"):
			c.fetches.Add(1)
		}
		h.ServeHTTP(w, r)
	})))
	t.Cleanup(hs.Close)
	return hs, c
}

// smallPushTransfers is lfs.concurrenttransfers of the small-file push tests: git-lfs gives each
// agent process one object at a time and waits for its complete, which is sent only once the
// object's shard is stored, so a batch holds at most this many files. 64 processes cost little
// (the start-up agent), and let 300 files go in a handful of batches.
const smallPushTransfers = "100"

// A push of many small files to xet-server shares xorbs and shards: a handful of xorb uploads and
// shard registrations, not one of each per file; every file clones back byte-identical.
func TestSmallFilePushToServerSharesXorbsAndShards(t *testing.T) {
	needLinux(t) // the agents of a push share their work through an abstract unix socket
	hs, counts := countingServer(t, serverHandler(t, t.TempDir(), ""))
	smallPushShares(t, hs.URL, counts)
}

// The same with xet-server's store on S3 (versitygw), the server a process of its own.
func TestSmallFilePushToS3ServerSharesXorbsAndShards(t *testing.T) {
	needLinux(t)
	buildServer(t)
	s3 := s3test.Start(t)
	serverEnv = s3.Env()
	t.Cleanup(func() { serverEnv = nil })
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--storage", s3.URL("cas"))
	u, err := url.Parse("http://" + s.addr)
	if err != nil {
		t.Fatal(err)
	}
	hs, counts := countingServer(t, httputil.NewSingleHostReverseProxy(u))
	smallPushShares(t, hs.URL, counts)
}

// smallPushShares pushes 300 small files to the LFS server at base, whose CAS requests counts
// counts, and checks the counts and the clone.
func smallPushShares(t *testing.T, base string, counts *casCounts) {
	t.Helper()
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "lfs.concurrenttransfers", smallPushTransfers)
	work, remote := batchRepo(t, e, base+"/team/small.git/info/lfs")
	const n = 300
	writeSmallFiles(t, work, n, 46)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "small")
	e.git(work, "push", "-q", "origin", "main")
	if x, s := counts.xorbs.Load(), counts.shards.Load(); x > 8 || s > 8 || x == 0 || s == 0 {
		t.Errorf("a push of %d small files made %d xorb uploads and %d shard registrations, want 1 to 8 of each; batches:\n%s",
			n, x, s, strings.Join(e.logLines("batch of small files"), "\n"))
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if got := sameTree(t, work, clone); got < n {
		t.Fatalf("compared %d files, want %d", got, n)
	}
}

// A push of 1,000 small files at git-lfs's defaults (8 transfers, batch answers of 100 objects)
// makes at most 10 xorb uploads and 10 shard registrations: git-lfs hands the agents 8 objects at a
// time, but each batch answer's actions name the server's listing of its 100 objects, which the
// leader reads and stores at once, so each batch answer costs one xorb and one shard (its 100
// files of at most 10 KB fit one xorb, and one batch's byte bound). The clone makes at most 3
// reconstruction and xorb requests per batch answer (one of each per file before): the download
// listing carries the files' plans and their ranges merged per xorb, one fetch, and the leader
// stages the whole answer's files from them, while the download that started it goes its own
// way (a plan and a fetch: a process git-lfs gives a single object waits for no other). Every
// file clones back byte-identical.
func TestSmallFilePushToServerOneBatchPerBatchAnswer(t *testing.T) {
	needLinux(t)
	hs, counts := countingServer(t, serverHandler(t, t.TempDir(), ""))
	smallPushPerBatchAnswer(t, hs.URL, counts)
}

// The same with xet-server's store on S3 (versitygw), the server a process of its own.
func TestSmallFilePushToS3ServerOneBatchPerBatchAnswer(t *testing.T) {
	needLinux(t)
	buildServer(t)
	s3 := s3test.Start(t)
	serverEnv = s3.Env()
	t.Cleanup(func() { serverEnv = nil })
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--storage", s3.URL("cas"))
	u, err := url.Parse("http://" + s.addr)
	if err != nil {
		t.Fatal(err)
	}
	hs, counts := countingServer(t, httputil.NewSingleHostReverseProxy(u))
	smallPushPerBatchAnswer(t, hs.URL, counts)
}

func smallPushPerBatchAnswer(t *testing.T, base string, counts *casCounts) {
	t.Helper()
	e := newEnv(t)
	e.install()
	work, remote := batchRepo(t, e, base+"/team/small.git/info/lfs")
	const n, answers = 1000, 10 // git-lfs's lfs.transfer.batchSize is 100
	writeSmallFiles(t, work, n, 50)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "small")
	e.git(work, "push", "-q", "origin", "main")
	x, s := counts.xorbs.Load(), counts.shards.Load()
	t.Logf("%d xorb uploads, %d shard registrations for %d files", x, s, n)
	if x > answers || s > answers || x == 0 || s == 0 {
		t.Errorf("a push of %d small files made %d xorb uploads and %d shard registrations, want 1 to %d of each; batches:\n%s",
			n, x, s, answers, strings.Join(e.logLines("batch of small files"), "\n"))
	}
	plans, fetches := counts.plans.Load(), counts.fetches.Load()
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	plans, fetches = counts.plans.Load()-plans, counts.fetches.Load()-fetches
	t.Logf("the clone: %d reconstructions, %d xorb fetches", plans, fetches)
	if plans+fetches > 3*answers {
		t.Errorf("a clone of %d small files made %d reconstructions and %d xorb fetches, want at most %d together", n, plans, fetches, 3*answers)
	}
	if got := sameTree(t, work, clone); got < n {
		t.Fatalf("compared %d files, want %d", got, n)
	}
}

// With git-lfs's batch size raised (lfs.transfer.batchSize, a user's choice), a push of 1,000
// small files is one batch answer, and so one xorb upload and one shard registration: the
// requests of a push follow its batch answers, not its files.
func TestSmallFilePushOneBatchAnswerOneShard(t *testing.T) {
	needLinux(t)
	hs, counts := countingServer(t, serverHandler(t, t.TempDir(), ""))
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "lfs.transfer.batchSize", "1000")
	work, remote := batchRepo(t, e, hs.URL+"/team/small.git/info/lfs")
	const n = 1000
	writeSmallFiles(t, work, n, 51)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "small")
	e.git(work, "push", "-q", "origin", "main")
	if x, s := counts.xorbs.Load(), counts.shards.Load(); x != 1 || s != 1 {
		t.Errorf("a push of %d small files in one batch answer made %d xorb uploads and %d shard registrations, want 1 and 1", n, x, s)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if got := sameTree(t, work, clone); got < n {
		t.Fatalf("compared %d files, want %d", got, n)
	}
}

// The agents of a push of many small files to xet-server killed with -9 half-way, then the push
// again: every file clones back byte-identical and the server's fsck is clean.
func TestSmallFilePushToServerAgentsKilled(t *testing.T) {
	needLinux(t)
	buildServer(t)
	data := t.TempDir()
	s := startServerProcess(t, servertest.FreeAddr(t), data)
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "lfs.concurrenttransfers", smallPushTransfers)
	work, remote := batchRepo(t, e, "http://"+s.addr+"/team/small.git/info/lfs")
	const n = 500
	writeSmallFiles(t, work, n, 47)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "small")

	push, out := startPush(t, e, work)
	uploaded := func() int { return len(e.logLines(`"op":"upload"`, "transfer complete")) }
	killAgentsWhen(t, push, out, work, "100 small files uploaded", func() bool { return uploaded() >= 100 })
	if got := uploaded(); got >= n {
		t.Fatalf("all %d files were uploaded before the kill", got)
	}
	e.git(work, "push", "-q", "origin", "main")
	fsckServer(t, data)
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if got := sameTree(t, work, clone); got < n {
		t.Fatalf("compared %d files, want %d", got, n)
	}
}

// A push of small files whose batch is refused for the repository's quota: the files of that batch
// fail (each, sent on its own then, is stored while it fits), with the quota's message shown to
// the user; every file stored is registered, so the push again, once the quota is lifted, uploads
// exactly the others. The quota is the files' bytes and 4 more: the server's batch route, which
// counts the objects' sizes, lets the push through, and the batch's xorb, whose records add 8
// bytes a chunk, passes it.
func TestSmallFilePushToServerOverQuota(t *testing.T) {
	needLinux(t)
	buildServer(t)
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "lfs.concurrenttransfers", smallPushTransfers)
	data, addr := t.TempDir(), servertest.FreeAddr(t)
	work, remote := batchRepo(t, e, "http://"+addr+"/team/q.git/info/lfs")
	const n = 60 // one batch answer of git-lfs (at most 100 objects)
	writeSmallFiles(t, work, n, 48)
	sum := dirSize(t, filepath.Join(work, "small"))
	s := startServerProcess(t, addr, data, "--repo-quota", fmt.Sprint(sum+4))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "small")
	out, err := e.gitErr(work, "push", "-q", "origin", "main")
	if err == nil || !strings.Contains(out, "repository team/q is over its") || !strings.Contains(out, "quota on "+addr) {
		t.Fatalf("push over the quota: %v\n%s", err, out)
	}
	if batches := e.logLines("a batch of small files failed", "quota"); len(batches) == 0 {
		t.Errorf("no batch of small files was refused for the quota")
	}
	uploads := func() int { return len(e.logLines(`"op":"upload"`, "transfer complete")) }
	stored := uploads()
	if stored == 0 || stored >= n {
		t.Fatalf("%d of %d files stored by the push over the quota, want some", stored, n)
	}
	t.Logf("%d of %d files stored; the user sees: %s", stored, n, out)
	s.cmd.Process.Kill()
	s.cmd.Wait()
	startServerProcess(t, addr, data)
	e.git(work, "push", "-q", "origin", "main")
	if again := uploads() - stored; again != n-stored {
		t.Errorf("the second push uploaded %d files, want the %d the first did not store", again, n-stored)
	}
	fsckServer(t, data)
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if got := sameTree(t, work, clone); got < n {
		t.Fatalf("compared %d files, want %d", got, n)
	}
}

// The same in Hub mode (`install --hub`, the agent calls the Hub's batch API itself): one batch
// call per batch of files, not one per file, and a handful of xorb uploads and shard
// registrations.
func TestSmallFilePushToHubSharesXorbsAndShards(t *testing.T) {
	needLinux(t)
	h := startHub(t, time.Hour)
	e := hubEnv(t, h)
	e.vars = append(e.vars, "HF_TOKEN="+hubWriteToken)
	e.git("", "config", "--global", "lfs.concurrenttransfers", smallPushTransfers)
	work, remote := hubRepo(t, e, h, "org/small")
	const n = 300
	writeSmallFiles(t, work, n, 49)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "small")
	e.git(work, "push", "-q", "origin", "main")
	if n := len(e.logLines(`"op":"upload"`, `"mode":"hub"`, "transfer complete")); n != 300 {
		t.Fatalf("%d uploads went through the Hub's xet action, want 300", n)
	}
	xorbs, shards := h.requests("POST", "/v1/xorbs/"), h.requests("POST", "/v1/shards")+h.requests("POST", "/v2/shards")
	batches := h.requests("POST", "/org/small.git/info/lfs/objects/batch")
	if xorbs > 8 || shards > 8 || batches > 8 || xorbs == 0 || shards == 0 || batches == 0 {
		t.Errorf("a push of %d small files made %d xorb uploads, %d shard registrations and %d batch calls, want 1 to 8 of each",
			n, xorbs, shards, batches)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if got := sameTree(t, work, clone); got < n {
		t.Fatalf("compared %d files, want %d", got, n)
	}
}
