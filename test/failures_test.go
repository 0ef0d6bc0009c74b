package test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// xorbFiles lists the stored xorb objects under a store directory.
func xorbFiles(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.Contains(filepath.ToSlash(p), "/xorbs/") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// agentPIDs returns the running git-xet-transfer processes working in dir (/proc).
func agentPIDs(dir string) []int {
	self := filepath.Join(binDir, "git-xet-transfer")
	return processes(func(pid int, _ []string) bool {
		exe, err1 := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		cwd, err2 := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		return err1 == nil && err2 == nil && exe == self && cwd == dir
	})
}

// processes lists the processes (in /proc) that match says to keep, given their pid and the
// fields of their /proc/PID/stat after the command name (state, ppid, pgrp, ...).
func processes(match func(pid int, stat []string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		if match(pid, strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// The agent killed in the middle of a push (some xorbs stored, no shard): the push fails, and
// repeating it succeeds with nothing missing.
func TestAgentKilledMidPushThenRepeated(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	work, remote := e.localRepo(repoOpts{})
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(200<<20, 21))
	writeFile(t, filepath.Join(work, "other.bin"), testutil.RandomBytes(1<<20, 22))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "x")
	storeDir := filepath.Join(remote, "xet")
	killMidPushThenRepeat(t, e, work, remote, "a xorb stored", func() bool { return len(xorbFiles(storeDir)) > 0 })
}

// The agents killed in the middle of a push of many small files to the embedded store, whose
// leader stores them in batches sharing one pack (a killed writer leaves its tail to the next
// writer's recovery): the push fails, and repeating it stores every file, which clones back byte
// for byte, with fsck clean.
func TestSmallFilesAgentKilledMidPushThenRepeated(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	work, remote := e.localRepo(repoOpts{})
	const n = 3000
	for i := range n {
		writeFile(t, filepath.Join(work, "d", fmt.Sprintf("f%04d.bin", i)), testutil.RandomBytes(1000+i*3, uint64(7000+i)))
	}
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "small files")
	storeDir := filepath.Join(remote, "xet")
	// A pack grows in 1 MiB steps of zeros ahead of its records: past 2 MiB, hundreds are stored.
	killMidPushThenRepeat(t, e, work, remote, "a pack past 2 MiB", func() bool { return packBytes(storeDir) > 2<<20 })
}

// killMidPushThenRepeat starts a push of work's commit to remote (embedded store), kills every
// agent once stored says it is under way (what: how), and checks that the push failed; then it
// repeats the push, clones, and checks the clone byte for byte and the store with fsck.
func killMidPushThenRepeat(t *testing.T, e *env, work, remote, what string, stored func() bool) {
	t.Helper()
	push := e.cmd(work, "git", "push", "origin", "main")
	var out strings.Builder
	push.Stdout, push.Stderr = &out, &out
	if err := push.Start(); err != nil {
		t.Fatal(err)
	}
	if !testutil.Eventually(60*time.Second, stored) {
		push.Process.Kill()
		push.Wait()
		t.Fatalf("no %s within 60 s\n%s", what, out.String())
	}
	killed := 0
	for _, pid := range agentPIDs(work) {
		if killProcess(pid) == nil {
			killed++
		}
	}
	err := push.Wait()
	if killed == 0 {
		t.Fatalf("found no agent process to kill (push: %v)\n%s", err, out.String())
	}
	if err == nil {
		// The kill raced with the end of the upload: the test proves nothing then.
		t.Fatalf("push succeeded although %d agents were killed mid-upload\n%s", killed, out.String())
	}
	t.Logf("killed %d agents; push failed as expected: %v", killed, err)

	e.git(work, "push", "-q", "origin", "main")
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	checkLFSObjects(t, clone)
	fsck := e.cmd(work, filepath.Join(binDir, "git-xet-transfer"), "fsck")
	if b, err := fsck.CombinedOutput(); err != nil || !strings.Contains(string(b), "no problems") {
		t.Errorf("git-xet-transfer fsck after the kill: %v\n%s", err, b)
	}
}

// A push to the embedded store killed while it writes a xorb leaves that xorb's temp file in the
// store's tmp/, fallocated to the xorb's size (64 MiB). Once it is an hour old (aged here) the
// next push removes it, as xet-server removes its own hourly. It failed with the temp file still
// there after any number of pushes: only a manual `fsck --clean-temp` removed it.
func TestKilledPushTempFileRemovedByNextPush(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	work, remote := e.localRepo(repoOpts{})
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(300<<20, 23))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "x")
	storeDir := filepath.Join(remote, "xet")
	temps := func() []string {
		m, _ := filepath.Glob(filepath.Join(storeDir, "tmp", "*"))
		return m
	}
	push, out := startPush(t, e, work)
	killMidWrite(t, push, out, work, temps)
	left := temps()
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range left {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	e.git(work, "push", "-q", "origin", "main")
	if got := temps(); len(got) != 0 {
		t.Errorf("after the next push, the store's tmp/ still holds %v (left by the killed push)", got)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
}

// killMidWrite kills the agents of push (working in work) -9 while one of them writes a blob:
// each time a temp file shows, the agents are paused, and killed when it is still there (else let
// go on until the next one). The push must fail.
func killMidWrite(t *testing.T, push *exec.Cmd, out *strings.Builder, work string, temps func() []string) {
	t.Helper()
	for {
		if !testutil.Eventually(120*time.Second, func() bool { return len(temps()) > 0 }) {
			push.Process.Kill()
			push.Wait()
			t.Fatalf("no temp file in the store within 120 s\n%s", out.String())
		}
		pids := agentPIDs(work)
		for _, pid := range pids {
			pauseProcess(pid)
		}
		if len(temps()) > 0 {
			for _, pid := range pids {
				killProcess(pid) // SIGKILL ends a stopped process too
			}
			break
		}
		for _, pid := range pids {
			resumeProcess(pid)
		}
	}
	if err := push.Wait(); err == nil {
		t.Fatalf("the push survived killing its agents mid-write\n%s", out.String())
	}
}

// packBytes is the size of the store's pack files (where small files' xorbs and entries go).
func packBytes(storeDir string) int64 {
	var n int64
	filepath.WalkDir(filepath.Join(storeDir, "packs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".pack") {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// A xorb corrupted on the server: the clone fails with a message that says so, and nothing
// corrupt reaches .git/lfs/objects or the work tree.
func TestCorruptXorbOnServer(t *testing.T) {
	e, s, data, work, remote := committedBatchRepo(t, 31)
	e.git(work, "push", "-q", "origin", "main")

	xorbs := xorbFiles(s.data)
	if len(xorbs) == 0 {
		t.Fatal("no xorb on the server")
	}
	for _, p := range xorbs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/3] ^= 0x40 // inside the chunk records
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clone := filepath.Join(e.home, "clone")
	out, err := e.gitErr("", "clone", remote, clone)
	if err == nil && !strings.Contains(out, "smudge") {
		t.Fatalf("clone of a corrupt xorb succeeded:\n%s", out)
	}
	t.Logf("clone output:\n%s", out)
	low := strings.ToLower(out)
	if !strings.Contains(low, "a.bin") || !(strings.Contains(low, "corrupt") || strings.Contains(low, "mismatch") || strings.Contains(low, "verif")) {
		t.Errorf("the clone's message does not say the data is corrupt:\n%s", out)
	}
	checkLFSObjects(t, clone)
	if b, err := os.ReadFile(filepath.Join(clone, "a.bin")); err == nil && len(b) == len(data) && string(b) != string(data) {
		t.Errorf("corrupt bytes in the work tree")
	}
}

// The repair of a corrupt xorb: fsck --verify-data finds it, --repair moves it aside, and pushing
// the file again stores it again (the push was a no-op before: the store said it had the file).
func TestCorruptXorbRepairedByPush(t *testing.T) {
	e := newEnv(t)
	e.install()
	s := startServer(t, "")
	work, remote := batchRepo(t, e, s.url+"/team/repo.git/info/lfs")
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(3<<20, 32))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "x")
	e.git(work, "push", "-q", "origin", "main")
	for _, p := range xorbFiles(s.data) {
		b, _ := os.ReadFile(p)
		b[len(b)/3] ^= 0x40
		os.Chmod(p, 0o644)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := store.Fsck(context.Background(), s.data, store.FsckOptions{}); !ok {
		t.Fatal("the footer-only check already fails: the damage is not where this test wants it")
	}
	s.srv.Close() // repair with the server stopped
	report, ok, err := store.Fsck(context.Background(), s.data, store.FsckOptions{VerifyData: true, Repair: true})
	if err != nil || ok || !strings.Contains(report, "moved aside") {
		t.Fatalf("fsck --verify-data --repair: ok=%v err=%v\n%s", ok, err, report)
	}
	s2 := startServerAt(t, s.data, "")
	writeFile(t, filepath.Join(work, ".lfsconfig"), []byte(fmt.Sprintf("[lfs]\n\turl = %s/team/repo.git/info/lfs\n\tlocksverify = false\n", s2.url)))
	e.git(work, "commit", "-q", "-am", "restarted server")
	e.git(work, "push", "-q", "origin", "main")
	e.git(work, "lfs", "push", "--all", "origin")
	if report, ok, err := store.Fsck(context.Background(), s.data, store.FsckOptions{VerifyData: true}); err != nil || !ok {
		t.Fatalf("after the push: %v\n%s", err, report)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
}

// Wrong credentials: git push fails and says the credentials were refused.
func TestBadCredentials(t *testing.T) {
	e := newEnv(t)
	e.install()
	salt := "73616c74"
	sum := sha256.Sum256([]byte("salt" + "right-password"))
	s := startServer(t, "alice:$sha256$"+salt+"$"+hex.EncodeToString(sum[:])+"\n")
	base := strings.Replace(s.url, "http://", "http://alice:wrong-password@", 1)
	work, _ := batchRepo(t, e, base+"/team/repo.git/info/lfs")
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(1<<20, 41))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "x")
	out, err := e.gitErr(work, "push", "origin", "main")
	if err == nil {
		t.Fatalf("push with a wrong password succeeded:\n%s", out)
	}
	t.Logf("push output:\n%s", out)
	low := strings.ToLower(out)
	if !strings.Contains(low, "401") && !strings.Contains(low, "credential") && !strings.Contains(low, "authoriz") && !strings.Contains(low, "authentic") {
		t.Errorf("the push's message does not name the credentials:\n%s", out)
	}

	// The right password works.
	good := strings.Replace(s.url, "http://", "http://alice:right-password@", 1)
	writeFile(t, filepath.Join(work, ".lfsconfig"), []byte(fmt.Sprintf("[lfs]\n\turl = %s/team/repo.git/info/lfs\n\tlocksverify = false\n", good)))
	e.git(work, "commit", "-q", "-am", "right password")
	e.git(work, "push", "-q", "origin", "main")
	if n := len(e.logLines(`"op":"upload"`, `"mode":"batch"`, "transfer complete")); n != 1 {
		t.Errorf("%d uploads through xet, want 1", n)
	}
}

// A server that is down: the push fails and the message names the connection.
func TestServerDown(t *testing.T) {
	e := newEnv(t)
	e.install()
	work, _ := batchRepo(t, e, "http://"+servertest.FreeAddr(t)+"/team/repo.git/info/lfs")
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(1<<20, 51))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "x")
	out, err := e.gitErr(work, "push", "origin", "main")
	if err == nil {
		t.Fatalf("push to a server that is down succeeded:\n%s", out)
	}
	t.Logf("push output:\n%s", out)
	if !strings.Contains(out, "connection refused") {
		t.Errorf("the push's message does not say the server cannot be reached:\n%s", out)
	}
}

// The LFS server answers but its CAS cannot be reached: the agent's message, shown by git push,
// names the CAS and the connection failure.
func TestCASDown(t *testing.T) {
	e := newEnv(t)
	e.install()
	dead := "http://" + servertest.FreeAddr(t)
	s := startServer(t, "", func(c *server.Config) { c.PublicURL = dead })
	work, _ := batchRepo(t, e, s.url+"/team/repo.git/info/lfs")
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(1<<20, 61))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "x")
	out, err := e.gitErr(work, "push", "origin", "main")
	if err == nil {
		t.Fatalf("push with the CAS down succeeded:\n%s", out)
	}
	t.Logf("push output:\n%s", out)
	if !strings.Contains(out, dead) || !strings.Contains(out, "connection refused") {
		t.Errorf("the push's message does not name the CAS and the connection failure:\n%s", out)
	}
}

// xorbPosts lists, from a server access log, the xorbs POSTed with the given status.
func xorbPosts(log string, status int) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, `"method":"POST"`) || !strings.Contains(l, fmt.Sprintf(`"status":%d`, status)) {
			continue
		}
		if i := strings.Index(l, `"path":"/v1/xorbs/default/`); i >= 0 {
			out = append(out, l[i+len(`"path":"/v1/xorbs/default/`):i+len(`"path":"/v1/xorbs/default/`)+64])
		}
	}
	return out
}

// A push to xet-server killed after some of a big file's xorbs were accepted, then pushed again,
// does not send those xorbs again (the agent asks HEAD /v1/xorbs first for big xorbs).
func TestInterruptedPushResumesWithoutResending(t *testing.T) {
	needLinux(t)
	lb := &logbuf.Buffer{}
	s := startServer(t, "", func(c *server.Config) { c.Log = zerolog.New(lb) })
	e := newEnv(t)
	e.install()
	work, remote := batchRepo(t, e, s.url+"/team/resume.git/info/lfs")
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(320<<20, 41)) // five xorbs
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "x")

	push := e.cmd(work, "git", "push", "origin", "main")
	var out strings.Builder
	push.Stdout, push.Stderr = &out, &out
	if err := push.Start(); err != nil {
		t.Fatal(err)
	}
	killAgentsWhen(t, push, &out, work, "two xorbs accepted", func() bool { return len(xorbPosts(lb.String(), 200)) >= 2 })
	accepted := xorbPosts(lb.String(), 200)
	mark := len(lb.String())

	e.git(work, "push", "-q", "origin", "main")
	second := xorbPosts(lb.String()[mark:], 200)
	for _, x := range second {
		for _, a := range accepted {
			if x == a {
				t.Errorf("xorb %s was accepted before the kill and sent again", x)
			}
		}
	}
	t.Logf("before the kill: %d xorbs accepted; the second push sent %d", len(accepted), len(second))
	if report, ok, err := store.Fsck(context.Background(), s.data, store.FsckOptions{}); err != nil || !ok {
		t.Errorf("store check after the kill: %v\n%s", err, report)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
}

// xet-server killed -9 in the middle of a download and started again on its data directory: the
// interrupted pull fails, the next one succeeds (and keeps what the first wrote), and the store
// checks clean.
func TestServerKilledMidDownload(t *testing.T) {
	needLinux(t)
	buildServer(t)
	data, addr := t.TempDir(), servertest.FreeAddr(t)
	s := startServerProcess(t, addr, data)
	e := newEnv(t)
	e.install()
	// Two ranges in flight (the file's terms are split into ranges of 16 MiB): parts are recorded
	// while the rest is still coming, whatever the machine's share would start with.
	e.vars = append(e.vars, "GIT_XET_CONCURRENCY=2")
	work, remote := batchRepo(t, e, throttle(t, "http://"+addr, 16<<20)+"/team/kill.git/info/lfs")
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(64<<20, 91))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "big")
	e.git(work, "push", "-q", "origin", "main")

	clone := filepath.Join(e.home, "clone")
	pull, out := e.startPull(remote, clone)
	if !testutil.Eventually(60*time.Second, func() bool { return partRecorded(clone, 4000) }) { // a part (8 MiB) recorded
		pull.Process.Kill()
		pull.Wait()
		t.Fatalf("the download did not start\n%s", out.String())
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	if err := pull.Wait(); err == nil {
		t.Fatalf("the pull survived the server's death\n%s", out.String())
	}
	startServerProcess(t, addr, data)
	e.git(clone, "lfs", "pull")
	sameTree(t, work, clone)
	if tr := e.downloadOf(oidOf(testutil.RandomBytes(64<<20, 91))); tr.Deduped == 0 {
		t.Errorf("the second pull kept nothing of the first: %+v", tr)
	}
	if report, ok, err := store.Fsck(context.Background(), filepath.Join(data, "cas"), store.FsckOptions{VerifyData: true}); err != nil || !ok {
		t.Errorf("fsck after the kill: %v\n%s", err, report)
	}
}

// Against xet-server, which says it checks every file's SHA-256 (X-Xet-Verifies-Sha256), the agent
// claims the oid instead of hashing the file; a local object whose bytes no longer match its oid
// is then refused by the server, nothing is registered under that oid, and once the object is
// right again the push goes through and clones.
func TestServerRefusesACorruptObject(t *testing.T) {
	e, s, data, work, remote := committedBatchRepo(t, 61)
	oid := oidOf(data)
	obj := objectPath(work, oid)
	bad := append([]byte(nil), data...)
	bad[len(bad)/2] ^= 1
	if err := os.WriteFile(obj, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := e.gitErr(work, "push", "origin", "main")
	if err == nil {
		t.Fatalf("the push of a corrupt object succeeded:\n%s", out)
	}
	// The server's refusal, not the agent's own check (which says "refusing to register"). It names
	// the oid the agent claimed, never what the stored content hashes to (a client learns no hash
	// of stored data it did not send).
	if !strings.Contains(out, "does not hash to "+oid) || strings.Contains(out, oidOf(bad)) {
		t.Errorf("the push's message is not the server's SHA-256 refusal naming the claimed oid only:\n%s", out)
	}
	st, err := store.Open(s.data, store.Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := hex.DecodeString(oid)
	if _, _, err := st.LookupSHA256(context.Background(), "team/repo", hash.FromSHA256([32]byte(sum))); err == nil {
		t.Fatal("the corrupt object was registered under its oid")
	}

	if err := os.WriteFile(obj, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e.git(work, "push", "-q", "origin", "main")
	if _, _, err := st.LookupSHA256(context.Background(), "team/repo", hash.FromSHA256([32]byte(sum))); err != nil {
		t.Fatalf("the oid is not registered after the push of the right bytes: %v", err)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
}

// committedBatchRepo starts a server and a work tree with the agent installed whose origin uses it
// (repository team/repo), with 3 MiB of data from seed committed as a.bin.
func committedBatchRepo(t *testing.T, seed uint64) (e *env, s *xetServer, data []byte, work, remote string) {
	t.Helper()
	e = newEnv(t)
	e.install()
	s = startServer(t, "")
	data = testutil.RandomBytes(3<<20, seed)
	work, remote = batchRepo(t, e, s.url+"/team/repo.git/info/lfs")
	writeFile(t, filepath.Join(work, "a.bin"), data)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "x")
	return e, s, data, work, remote
}
