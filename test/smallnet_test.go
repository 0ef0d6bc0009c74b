package test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// casCounts counts the xorb uploads and shard registrations a CAS answered.
type casCounts struct{ xorbs, shards atomic.Int64 }

// countingServer serves xet-server's handler (open mode, a store in a temp dir) on loopback and
// counts its xorb uploads (POST …/xorbs/…) and shard registrations (POST …/shards).
func countingServer(t *testing.T) (*httptest.Server, *casCounts) {
	t.Helper()
	h := serverHandler(t, t.TempDir(), "")
	c := &casCounts{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			switch {
			case strings.Contains(r.URL.Path, "/xorbs/"):
				c.xorbs.Add(1)
			case strings.HasSuffix(r.URL.Path, "/shards"):
				c.shards.Add(1)
			}
		}
		h.ServeHTTP(w, r)
	}))
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
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "lfs.concurrenttransfers", smallPushTransfers)
	hs, counts := countingServer(t)
	work, remote := batchRepo(t, e, hs.URL+"/team/small.git/info/lfs")
	const n = 300
	writeSmallFiles(t, work, n, 46)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "small")
	e.git(work, "push", "-q", "origin", "main")
	if x, s := counts.xorbs.Load(), counts.shards.Load(); x > 8 || s > 8 {
		t.Errorf("a push of %d small files made %d xorb uploads and %d shard registrations, want at most 8 of each; batches:\n%s",
			n, x, s, strings.Join(e.logLines("batch of small files"), "\n"))
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if got := sameTree(t, work, clone); got < n {
		t.Fatalf("compared %d files, want %d", got, n)
	}
}
