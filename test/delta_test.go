package test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/chaos"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// deltaRemote is a remote to push to and clone from: the embedded store or xet-server.
type deltaRemote struct {
	name  string
	setup func(t *testing.T, e *env) (work, remote string)
}

var deltaRemotes = []deltaRemote{
	{"embedded", func(t *testing.T, e *env) (string, string) {
		return e.localRepo(repoOpts{})
	}},
	{"server", func(t *testing.T, e *env) (string, string) {
		s := startServer(t, "")
		return batchRepo(t, e, s.url+"/team/delta.git/info/lfs")
	}},
}

// editScattered overwrites n regions of size bytes spread over b with new random bytes.
func editScattered(b []byte, n, size int, seed uint64) []byte {
	out := append([]byte(nil), b...)
	for i := 0; i < n; i++ {
		at := (len(b) / n) * i
		copy(out[at:], testutil.RandomBytes(size, seed+uint64(i)))
	}
	return out
}

// transfer is one "transfer complete" line of the agents' log.
type transfer struct {
	Op, Oid  string
	Size     int64
	NewBytes int64 `json:"new_bytes"`
	Deduped  int64 `json:"deduped_bytes"`
}

// parseTransfer parses a "transfer complete" log line.
func parseTransfer(t *testing.T, line string) transfer {
	t.Helper()
	var tr transfer
	if err := json.Unmarshal([]byte(line), &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// downloadOf returns the last logged download of oid.
func (e *env) downloadOf(oid string) transfer {
	e.t.Helper()
	var tr transfer
	for _, l := range e.logLines(`"op":"download"`, oid, "transfer complete") {
		tr = parseTransfer(e.t, l)
	}
	if tr.Oid != oid {
		e.t.Fatalf("no download of %s logged", oid)
	}
	return tr
}

func oidOf(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func objectPath(repo, oid string) string {
	return filepath.Join(repo, ".git", "lfs", "objects", oid[0:2], oid[2:4], oid)
}

// forDeltaRemotes runs fn as a subtest per kind of remote, with the agent installed and a work tree
// whose origin is the remote.
func forDeltaRemotes(t *testing.T, fn func(t *testing.T, e *env, work, remote string)) {
	for _, r := range deltaRemotes {
		t.Run(r.name, func(t *testing.T) {
			e := newEnv(t)
			e.install()
			work, remote := r.setup(t, e)
			fn(t, e, work, remote)
		})
	}
}

// pushAndClone commits b as model.bin in work, pushes it, and, when clone is set, clones remote
// there.
func (e *env) pushAndClone(work, remote, clone string, b []byte, msg string) {
	e.t.Helper()
	writeFile(e.t, filepath.Join(work, "model.bin"), b)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", msg)
	e.git(work, "push", "-q", "origin", "main")
	if clone != "" {
		e.git("", "clone", "-q", remote, clone)
	}
}

// A pull of a new version of a big file fetches only its changed chunks, from a previous version
// downloaded (the clone) or uploaded (the work tree) here; a local object changed on disk is
// never the source of a wrong byte.
func TestDeltaPull(t *testing.T) {
	forDeltaRemotes(t, func(t *testing.T, e *env, work, remote string) {
		const size = 48 << 20
		v1 := testutil.RandomBytes(size, 71)
		clone := filepath.Join(e.home, "clone")
		e.pushAndClone(work, remote, clone, v1, "v1")
		commit := func(repo string, b []byte, msg string) { e.pushAndClone(repo, remote, "", b, msg) }
		// v2: ten scattered 64 KiB edits (1.3 %), pulled into the clone that downloaded v1.
		v2 := editScattered(v1, 10, 64<<10, 100)
		commit(work, v2, "v2")
		// The push recorded where v2's chunks lie in the uploader's chunk index (its map), which a
		// pull there takes its delta from (v4 below).
		if _, err := os.Stat(filepath.Join(work, ".git", "lfs", "xet", "chunks", "maps", oidOf(v2))); err != nil {
			t.Errorf("the push did not record v2 in the chunk index: %v", err)
		}
		e.git(clone, "pull", "-q")
		sameTree(t, work, clone)
		tr := e.downloadOf(oidOf(v2))
		t.Logf("v2 pulled into the clone: fetched %d of %d bytes, %d local", tr.NewBytes, tr.Size, tr.Deduped)
		// 640 KiB edited: each edit costs its chunks and about one chunk on either side.
		if tr.NewBytes > size*5/100 || tr.NewBytes+tr.Deduped != size {
			t.Errorf("v2: fetched %d of %d bytes, want at most 5 %%", tr.NewBytes, size)
		}

		// v3, with a byte of the clone's v2 flipped on disk: the pull fetches what it cannot trust.
		v3 := editScattered(v2, 10, 64<<10, 200)
		commit(work, v3, "v3")
		obj := objectPath(clone, oidOf(v2))
		b, err := os.ReadFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		b[size/3+12345] ^= 1
		os.Chmod(obj, 0o644)
		if err := os.WriteFile(obj, b, 0o644); err != nil {
			t.Fatal(err)
		}
		e.git(clone, "pull", "-q")
		sameTree(t, work, clone)
		if n := len(e.logLines("download: local copy does not verify")); n == 0 {
			t.Error("the flipped byte was not noticed")
		}

		// v4 from the clone, pulled into the work tree that uploaded v3.
		v4 := editScattered(v3, 10, 64<<10, 300)
		commit(clone, v4, "v4")
		e.git(work, "pull", "-q", "origin", "main")
		sameTree(t, clone, work)
		tr = e.downloadOf(oidOf(v4))
		if tr.NewBytes > size*5/100 {
			t.Errorf("v4 into the uploader: fetched %d of %d bytes", tr.NewBytes, size)
		}
		if !strings.Contains(e.git(work, "lfs", "fsck"), "OK") {
			t.Error("git lfs fsck")
		}
	})
}

// A clone whose chunk index was lost rebuilds it from the objects it holds, at the next download of
// a big file, and that pull still fetches only the changed chunks.
func TestDeltaAfterIndexLost(t *testing.T) {
	forDeltaRemotes(t, func(t *testing.T, e *env, work, remote string) {
		const size = 24 << 20
		v1 := testutil.RandomBytes(size, 81)
		clone := filepath.Join(e.home, "clone")
		e.pushAndClone(work, remote, clone, v1, "v1")
		if err := os.RemoveAll(filepath.Join(clone, ".git", "lfs", "xet")); err != nil {
			t.Fatal(err)
		}
		v2 := editScattered(v1, 10, 64<<10, 400)
		e.pushAndClone(work, remote, "", v2, "v2")
		e.git(clone, "pull", "-q")
		sameTree(t, work, clone)
		if n := len(e.logLines("chunk index rebuilt from the objects here", `"objects":1`)); n != 1 {
			t.Errorf("%d rebuilds of one object logged, want 1", n)
		}
		tr := e.downloadOf(oidOf(v2))
		t.Logf("v2 pulled after the index was lost: fetched %d of %d bytes, %d local", tr.NewBytes, tr.Size, tr.Deduped)
		if tr.NewBytes > size*8/100 || tr.NewBytes+tr.Deduped != size {
			t.Errorf("v2: fetched %d of %d bytes, want at most 8 %%", tr.NewBytes, size)
		}
	})
}

// throttle serves backend with response bodies sent at about rate bytes per second (to interrupt a
// download half-way): the chaos proxy's trickle, on every answer.
func throttle(t *testing.T, backend string, rate int) string {
	return chaosProxy(t, backend, chaos.Rule{Times: math.MaxInt, Kind: chaos.Trickle, Rate: int64(rate)})
}

// chaosProxy serves backend through an in-process chaos proxy with rules.
func chaosProxy(t *testing.T, backend string, rules ...chaos.Rule) string {
	p, err := chaos.New(backend)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		p.Add(r)
	}
	hs := httptest.NewServer(p)
	t.Cleanup(hs.Close)
	return hs.URL
}

// startPull clones remote into clone without LFS objects, then starts `git lfs pull` there; the
// pull's output goes to the returned builder.
func (e *env) startPull(remote, clone string) (*exec.Cmd, *strings.Builder) {
	e.t.Helper()
	skip := e.cmd("", "git", "clone", "-q", remote, clone)
	skip.Env = append(skip.Env, "GIT_LFS_SKIP_SMUDGE=1")
	if out, err := skip.CombinedOutput(); err != nil {
		e.t.Fatalf("clone: %v\n%s", err, out)
	}
	pull := e.cmd(clone, "git", "lfs", "pull")
	out := &strings.Builder{}
	pull.Stdout, pull.Stderr = out, out
	if err := pull.Start(); err != nil {
		e.t.Fatal(err)
	}
	return pull, out
}

// partRecorded reports whether a download in progress in clone recorded at least n bytes of parts
// (its .part.xetmap).
func partRecorded(clone string, n int64) bool {
	ms, _ := filepath.Glob(filepath.Join(clone, ".git", "lfs", "tmp", "xet-*.part.xetmap"))
	for _, m := range ms {
		if fi, err := os.Stat(m); err == nil && fi.Size() >= n {
			return true
		}
	}
	return false
}

// A download killed half-way resumes: the second attempt keeps what the first wrote and fetches
// only the rest.
func TestDownloadResumesAfterKill(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	s := startServer(t, "")
	work, remote := batchRepo(t, e, throttle(t, s.url, 64<<20)+"/team/resume.git/info/lfs")
	const size = 128 << 20
	data := testutil.RandomBytes(size, 81)
	writeFile(t, filepath.Join(work, "big.bin"), data)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	e.git(work, "push", "-q", "origin", "main")

	clone := filepath.Join(e.home, "clone")
	pull, out := e.startPull(remote, clone)
	// A part record is ~4.7 KB per 8 MiB written (128 chunks of 36 bytes).
	killAgentsWhen(t, pull, out, clone, "half the file written", func() bool { return partRecorded(clone, size/2/(8<<20)*4600) })
	e.git(clone, "lfs", "pull")
	sameTree(t, work, clone)
	tr := e.downloadOf(oidOf(data))
	t.Logf("second attempt: fetched %d of %d bytes, kept %d", tr.NewBytes, tr.Size, tr.Deduped)
	if tr.Deduped < size*4/10 || tr.NewBytes+tr.Deduped != size {
		t.Errorf("second attempt fetched %d of %d bytes and kept %d, want at least 40 %% kept", tr.NewBytes, size, tr.Deduped)
	}
	if ms, _ := filepath.Glob(filepath.Join(clone, ".git", "lfs", "tmp", "xet-*")); len(ms) != 0 {
		t.Errorf("left in git-lfs's temp dir: %v", ms)
	}
}

// Two pulls at once in two clones sharing one cache (one HOME) both take their delta and both
// give the right file.
func TestParallelDeltaPulls(t *testing.T) {
	e := newEnv(t)
	e.install()
	work, remote := deltaRemotes[0].setup(t, e)
	const size = 32 << 20
	v1 := testutil.RandomBytes(size, 91)
	writeFile(t, filepath.Join(work, "model.bin"), v1)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	e.git(work, "push", "-q", "origin", "main")
	clones := []string{filepath.Join(e.home, "a"), filepath.Join(e.home, "b")}
	for _, c := range clones {
		e.git("", "clone", "-q", remote, c)
	}
	v2 := editScattered(v1, 8, 64<<10, 400)
	writeFile(t, filepath.Join(work, "model.bin"), v2)
	e.git(work, "commit", "-q", "-am", "v2")
	e.git(work, "push", "-q", "origin", "main")
	errs := make(chan error, len(clones))
	for _, c := range clones {
		go func() {
			out, err := e.cmd(c, "git", "pull", "-q").CombinedOutput()
			if err != nil {
				err = fmt.Errorf("pull in %s: %v\n%s", c, err, out)
			}
			errs <- err
		}()
	}
	for range clones {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range clones {
		sameTree(t, work, c)
	}
	if n := len(e.logLines(`"op":"download"`, oidOf(v2), "transfer complete")); n != 2 {
		t.Fatalf("%d downloads of v2 logged, want 2", n)
	}
	if n := len(e.logLines("download: delta", oidOf(v2))); n != 2 {
		t.Errorf("%d of the 2 pulls took a delta", n)
	}
}

// A clone whose xorb download stalls mid-body goes on after the stall timeout (it hung for ever).
func TestStalledDownloadIsRetried(t *testing.T) {
	e := newEnv(t)
	e.install()
	s := startServer(t, "")
	work, _ := batchRepo(t, e, chaosProxy(t, s.url, chaos.Rule{Method: "GET", Prefix: "/xorbs/", Times: 1, Kind: chaos.Stall, Offset: 64 << 10})+"/team/stall.git/info/lfs")
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(4<<20, 8))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "a")
	e.git(work, "push", "-q", "origin", "main")
	e.vars = append(e.vars, "GIT_XET_STALL_TIMEOUT=1s")
	start := time.Now()
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", filepath.Join(e.home, "remote.git"), clone)
	sameTree(t, work, clone)
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("the clone took %v", d)
	}
	if len(e.logLines("the answer stalled")) == 0 {
		t.Error("no stall was logged: the fault did not happen")
	}
}
