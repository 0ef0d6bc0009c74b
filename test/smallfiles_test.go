package test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// writeSmallFiles writes n files of 1-10 KB of random bytes under dir/small.
func writeSmallFiles(t *testing.T, dir string, n int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	for i := 0; i < n; i++ {
		b := make([]byte, 1000+r.IntN(9000))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		writeFile(t, filepath.Join(dir, "small", fmt.Sprintf("d%02d", i%10), fmt.Sprintf("f%04d.bin", i)), b)
	}
}

// smallFilesRepo makes a repository (work) of n small files committed, with origin a new local
// bare remote (the embedded store).
func smallFilesRepo(t *testing.T, e *env, n int, seed uint64) (work, remote string) {
	t.Helper()
	work, remote = e.localRepo(repoOpts{})
	writeSmallFiles(t, work, n, seed)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "small")
	return work, remote
}

// packedBytes is the size of the pack files under root: how much a store of small objects holds.
func packedBytes(root string) int64 {
	var n int64
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".pack") {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// startPush starts `git push origin main` in work and returns it with its output.
func startPush(t *testing.T, e *env, work string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	push := e.cmd(work, "git", "push", "origin", "main")
	out := &strings.Builder{}
	push.Stdout, push.Stderr = out, out
	newProcessGroup(push) // killPush kills git, git-lfs and the agents
	if err := push.Start(); err != nil {
		t.Fatal(err)
	}
	return push, out
}

// killAgentsWhen waits (up to 2 minutes) until cond holds, then kills the push's agents with -9 and
// checks that the push failed (it was interrupted mid-way, not after the end).
func killAgentsWhen(t *testing.T, push *exec.Cmd, out *strings.Builder, work, what string, cond func() bool) {
	t.Helper()
	if !testutil.Eventually(120*time.Second, cond) {
		push.Process.Kill()
		push.Wait()
		t.Fatalf("not within 120 s: %s\n%s", what, out.String())
	}
	for _, pid := range agentPIDs(work) {
		killProcess(pid)
	}
	if err := push.Wait(); err == nil {
		t.Fatalf("the push survived killing its agents (after %s): nothing was interrupted\n%s", what, out.String())
	}
}

// killPush kills a push started by startPush, with everything it started, and reaps it.
func killPush(push *exec.Cmd) {
	killProcessGroup(push)
}

// A push of many small files to the embedded store, its agents killed half-way, then pushed
// again: everything clones byte-identical, and fsck finds no entry naming missing bytes.
func TestSmallFilePushAgentsKilled(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	work, remote := smallFilesRepo(t, e, 600, 61)

	push, out := startPush(t, e, work)
	storeDir := filepath.Join(remote, "xet")
	killAgentsWhen(t, push, out, work, "300 KB of small objects stored", func() bool { return packedBytes(storeDir) > 300<<10 })
	repushAndCheck(t, e, work, remote, 600)
}

// repushAndCheck pushes work again after a push was interrupted, then checks that fsck finds no
// entry naming missing bytes and that a clone holds the n files byte-identical.
func repushAndCheck(t *testing.T, e *env, work, remote string, n int) {
	t.Helper()
	e.git(work, "push", "-q", "origin", "main")
	fsck := e.cmd(work, filepath.Join(binDir, "git-xet-transfer"), "fsck")
	if b, err := fsck.CombinedOutput(); err != nil || !strings.Contains(string(b), "no problems") {
		t.Errorf("fsck after the kill and the second push: %v\n%s", err, b)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if got := sameTree(t, work, clone); got < n {
		t.Fatalf("compared %d files, want the %d", got, n)
	}
}

// serverEnv is added to the environment of the servers startServerProcess starts (the S3 test's
// AWS variables).
var serverEnv []string

// xetServerProcess is xet-server as a process of its own (so that it can be killed with -9).
type xetServerProcess struct {
	cmd    *exec.Cmd
	addr   string
	data   string
	log    *logbuf.Buffer // its stdout and stderr, written while it runs
	secret string         // --secret-file, when given
}

func startServerProcess(t *testing.T, addr, data string, extra ...string) *xetServerProcess {
	t.Helper()
	s := &xetServerProcess{addr: addr, data: data, log: &logbuf.Buffer{}}
	args := append([]string{"--listen", addr, "--data", data, "--log-level", "warn"}, extra...)
	s.cmd = exec.Command(filepath.Join(binDir, "xet-server"), args...)
	s.cmd.Env = append(os.Environ(), serverEnv...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	if !testutil.Eventually(20*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}) {
		t.Fatalf("xet-server did not start\n%s", s.log.String())
	}
	return s
}

// The same with xet-server killed -9 half-way and restarted on its data directory.
func TestSmallFilePushServerKilled(t *testing.T) {
	needLinux(t)
	buildServer(t)
	data := t.TempDir()
	addr := servertest.FreeAddr(t)
	s := startServerProcess(t, addr, data)
	e := newEnv(t)
	e.install()
	work, remote := batchRepo(t, e, "http://"+addr+"/team/small.git/info/lfs")
	writeSmallFiles(t, work, 600, 62)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "small")

	push, out := startPush(t, e, work)
	if !testutil.Eventually(60*time.Second, func() bool { return packedBytes(data) > 300<<10 }) {
		push.Process.Kill()
		push.Wait()
		t.Fatalf("no small objects stored within 60 s\n%s", out.String())
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	killPush(push) // it would retry for a while: the user gives up, restarts the server, pushes again
	atKill := packedBytes(data)
	startServerProcess(t, addr, data)
	e.git(work, "push", "-q", "origin", "main")
	if final := packedBytes(data); atKill > final*9/10 {
		t.Fatalf("the server was killed with %d of %d bytes stored: too late to prove anything", atKill, final)
	}
	if report, ok, err := store.Fsck(context.Background(), filepath.Join(data, "cas"), store.FsckOptions{}); err != nil || !ok {
		t.Errorf("store check after the kill and the second push: %v\n%s", err, report)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if n := sameTree(t, work, clone); n < 600 {
		t.Fatalf("compared %d files, want the 600", n)
	}
}

// buildServer builds xet-server into binDir once.
func buildServer(t *testing.T) {
	t.Helper()
	buildTool(t, "xet-server", "../cmd/xet-server")
}

// Two pushes of overlapping small-file sets at once to one embedded remote (two branches): both
// complete, both branches clone byte-identical, and fsck is clean.
func TestOverlappingSmallFilePushesAtOnce(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	remote := filepath.Join(e.home, "remote.git")
	e.bareRemote(remote)
	works := []string{filepath.Join(e.home, "a"), filepath.Join(e.home, "b")}
	for i, w := range works {
		e.workTree(w, remote, repoOpts{})
		writeSmallFiles(t, w, 300, 71)                                         // the same 300 files in both
		writeSmallFiles(t, filepath.Join(w, fmt.Sprint(i)), 150, uint64(80+i)) // and 150 of their own
		e.git(w, "add", ".")
		e.git(w, "commit", "-q", "-m", "overlap")
	}
	errs := make(chan error, 2)
	for i, w := range works {
		go func() {
			out, err := e.cmd(w, "git", "push", "-q", "origin", fmt.Sprintf("main:branch%d", i)).CombinedOutput()
			if err != nil {
				err = fmt.Errorf("push %d: %v\n%s", i, err, out)
			}
			errs <- err
		}()
	}
	for range works {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range works {
		clone := filepath.Join(e.home, fmt.Sprintf("clone%d", i))
		e.git("", "clone", "-q", "-b", fmt.Sprintf("branch%d", i), remote, clone)
		if n := sameTree(t, w, clone); n < 450 {
			t.Fatalf("branch %d: compared %d files, want 450", i, n)
		}
	}
	fsck := e.cmd(works[0], filepath.Join(binDir, "git-xet-transfer"), "fsck")
	if b, err := fsck.CombinedOutput(); err != nil || !strings.Contains(string(b), "no problems") {
		t.Errorf("fsck after two pushes at once: %v\n%s", err, b)
	}
}

// A push of many small files through the agents git-lfs starts leaves a shard cache of at most
// twice the chunk hashes it indexes: each agent merges its uploads' one-chunk xorbs into a singles
// file on exit (40 bytes per upload, against a 32-byte hash), not a shard per file.
func TestSmallFilePushCacheFootprint(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	const n = 500
	work, remote := smallFilesRepo(t, e, n, 71)
	e.git(work, "push", "-q", "origin", "main")

	cacheDir := filepath.Join(e.home, ".cache", "huggingface", "xet")
	var total int64
	kinds := map[string]int{}
	filepath.WalkDir(cacheDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
				kinds[filepath.Ext(p)]++
			}
		}
		return nil
	})
	// A file over 8 KiB is sometimes cut in two chunks: those few go to a merged shard.
	if kinds[".singles"] == 0 || kinds[".mdb"] > kinds[".singles"] {
		t.Errorf("cache files by kind %v: want the one-chunk uploads in singles files", kinds)
	}
	if per := float64(total) / n; per > 64 {
		t.Errorf("the cache holds %.1f bytes per small upload (%d in all), want at most 64 (twice its chunk hash)", per, total)
	}
	checkPacksEndInRecords(t, filepath.Join(remote, "xet"))
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if got := sameTree(t, work, clone); got < n {
		t.Fatalf("compared %d files, want %d", got, n)
	}
}

// checkPacksEndInRecords fails when a pack of the store in dir ends in zeros: a pack writer keeps up
// to 1 MiB of zeros ahead of its records and the agents cut them when they exit.
func checkPacksEndInRecords(t *testing.T, dir string) {
	t.Helper()
	packs, _ := filepath.Glob(filepath.Join(dir, "packs", "*.pack"))
	if len(packs) == 0 {
		t.Fatalf("no packs under %s", dir)
	}
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if tail := b[max(0, len(b)-64):]; bytes.Count(tail, []byte{0}) == len(tail) {
			t.Errorf("%s (%d bytes) ends in zeros after the push: the agent left its pack's zeros ahead", filepath.Base(p), len(b))
		}
	}
}
