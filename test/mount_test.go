//go:build linux

package test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/chaos"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// checkMountedTree compares a mount of the work tree's HEAD with the work tree: every file's bytes
// (big.bin with cmp, and at random ranges), modes, the symbolic link.
func checkMountedTree(t *testing.T, work, mnt string, big []byte) {
	t.Helper()
	if n := sameTree(t, work, mnt); n < 5 {
		t.Fatalf("compared %d files", n)
	}
	if out, err := exec.Command("cmp", filepath.Join(work, "big.bin"), filepath.Join(mnt, "big.bin")).CombinedOutput(); err != nil {
		t.Fatalf("cmp: %v %s", err, out)
	}
	rng := rand.New(rand.NewPCG(7, uint64(len(big))))
	for i := 0; i < 30; i++ {
		off := rng.Int64N(int64(len(big)))
		n := 1 + rng.IntN(3<<20)
		want := big[off:min(off+int64(n), int64(len(big)))]
		if got := readRange(t, filepath.Join(mnt, "big.bin"), off, n); !bytes.Equal(got, want) {
			t.Fatalf("%d bytes at %d differ", n, off)
		}
	}
	fi, err := os.Stat(filepath.Join(mnt, "run.sh"))
	if err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("run.sh: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(mnt, "big.bin")); err != nil || fi.Mode().Perm() != 0o444 || fi.Size() != int64(len(big)) {
		t.Errorf("big.bin: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(mnt, "LINK")); err != nil || target != "README.md" {
		t.Errorf("LINK: %q %v", target, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "new.txt"), []byte("x"), 0o644); err == nil {
		t.Error("a file was written in the read-only mount")
	}
}

// Against the embedded store of a local remote, in a clone holding pointers only: the mount shows
// HEAD's tree with the files' bytes; --rev shows the tagged v1; unmount ends the mount process;
// nothing is written to .git/lfs/objects.
func TestMountEmbeddedStore(t *testing.T) {
	e, work, clone, mnt, v1, v2 := embeddedMount(t, 24<<20)
	m := e.mount(clone, mnt)
	checkMountedTree(t, work, mnt, v2)
	if out, err := e.cmd(clone, "git", "xet-transfer", "unmount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("unmount: %v %s", err, out)
	}
	if err, ok := m.wait(5 * time.Second); !ok || err != nil {
		t.Fatalf("the mount process after unmount: ended %v, %v\n%s", ok, err, m.out.String())
	}
	e.mount(clone, mnt, "--rev", "v1")
	if got, err := os.ReadFile(filepath.Join(mnt, "big.bin")); err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("--rev v1: big.bin is not v1's (%v)", err)
	}
	if n := checkLFSObjects(t, clone); n != 0 {
		t.Errorf("the mount wrote %d objects to .git/lfs/objects", n)
	}
}

// A mount ends within 2 s of SIGTERM, and unmounts; a mount whose process was killed is cleaned up
// by the next mount of its directory, and by unmount.
func TestMountSignalsAndStaleMounts(t *testing.T) {
	e, _, clone, mnt, _, v2 := embeddedMount(t, 4<<20)
	m := e.mount(clone, mnt)
	f, err := os.Open(filepath.Join(mnt, "big.bin")) // a file open in it: the unmount is lazy
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	m.cmd.Process.Signal(syscall.SIGTERM)
	if _, ok := m.wait(2 * time.Second); !ok {
		t.Fatalf("the mount process was still running 2 s after SIGTERM\n%s", m.out.String())
	}
	t.Logf("exited %v after SIGTERM", time.Since(start))
	if isMounted(mnt) {
		t.Fatal("still mounted after SIGTERM")
	}

	m = e.mount(clone, mnt)
	m.cmd.Process.Kill()
	m.wait(5 * time.Second)
	if _, err := os.ReadDir(mnt); !strings.Contains(errString(err), "not connected") {
		t.Fatalf("after a kill the mount point says %v, want 'transport endpoint is not connected'", err)
	}
	e.mount(clone, mnt) // cleans the stale mount first
	if got := readRange(t, filepath.Join(mnt, "big.bin"), 0, len(v2)); !bytes.Equal(got, v2) {
		t.Fatal("the mount over a stale one reads wrong bytes")
	}
	pid := mountPID(t, mnt)
	syscall.Kill(pid, syscall.SIGKILL)
	if !testutil.Eventually(5*time.Second, func() bool { _, err := os.ReadDir(mnt); return strings.Contains(errString(err), "not connected") }) {
		t.Fatal("the killed mount did not go stale")
	}
	if out, err := e.cmd(clone, "git", "xet-transfer", "unmount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("unmount of a stale mount: %v %s", err, out)
	}
	if _, err := os.ReadDir(mnt); err != nil || isMounted(mnt) {
		t.Fatalf("after unmount: %v, mounted %v", err, isMounted(mnt))
	}
	if out, err := e.cmd(clone, "git", "xet-transfer", "unmount", mnt).CombinedOutput(); err == nil || !strings.Contains(string(out), "not mounted") {
		t.Errorf("unmount of a plain directory: %v %s", err, out)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// mountPID is the pid of the mount process serving mnt (the one whose command line names it).
func mountPID(t *testing.T, mnt string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && strings.HasSuffix(args[0], "git-xet-transfer") && args[1] == "mount" && args[len(args)-2] == mnt {
			return pid
		}
	}
	t.Fatalf("no mount process serves %s", mnt)
	return 0
}

// --background returns once the mount is up (its files can be read at once), or fails with the
// reason when it cannot mount.
func TestMountBackground(t *testing.T) {
	e, _, clone, mnt, _, v2 := embeddedMount(t, 2<<20)
	out, err := e.cmd(clone, "git", "xet-transfer", "mount", "--background", mnt).CombinedOutput()
	if err != nil {
		t.Fatalf("mount --background: %v %s", err, out)
	}
	t.Cleanup(func() { e.cmd(clone, "git", "xet-transfer", "unmount", mnt).Run() })
	if got, err := os.ReadFile(filepath.Join(mnt, "big.bin")); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("right after mount --background returned: %v", err)
	}
	out, err = e.cmd(clone, "git", "xet-transfer", "mount", "--background", "--rev", "no-such-rev", filepath.Join(e.home, "mnt2")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no-such-rev") {
		t.Fatalf("mount --background of a missing revision: %v %s", err, out)
	}
	out, err = e.cmd(clone, "git", "xet-transfer", "mount", "--background", mnt).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "already") {
		t.Fatalf("a second mount on a mounted directory: %v %s", err, out)
	}
}

// Ctrl-C while --background waits for its mount to come up stops the mount process too: nothing
// was complete, and the user was told nothing. Before, the command died and its mount process, in a
// session of its own, went on to mount (here it stayed blocked opening its log, a FIFO nobody
// reads: its start-up held still, so that the interrupt comes before the mount).
func TestMountBackgroundInterruptedDuringStartUp(t *testing.T) {
	e, _, clone, mnt, _, _ := embeddedMount(t, 1<<20)
	fifo := filepath.Join(e.home, "mount-log.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fg := e.cmd(clone, filepath.Join(binDir, "git-xet-transfer"), "mount", "--background", mnt)
	fg.Env = append(fg.Env, "GIT_XET_LOG="+fifo)
	var out strings.Builder
	fg.Stdout, fg.Stderr = &out, &out
	newProcessGroup(fg)
	if err := fg.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- fg.Wait() }()
	var child int
	t.Cleanup(func() {
		syscall.Kill(-fg.Process.Pid, syscall.SIGKILL)
		for _, pid := range mountProcesses(mnt) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if isMounted(mnt) {
			exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
	})
	if !testutil.Eventually(30*time.Second, func() bool {
		// The mount process, not git (which the command runs first to find the repository).
		if kids := mountProcesses(mnt); len(kids) > 0 {
			child = kids[0]
		}
		return child != 0
	}) {
		t.Fatalf("mount --background started no mount process\n%s", out.String())
	}
	sent := time.Now()
	syscall.Kill(-fg.Process.Pid, syscall.SIGINT) // Ctrl-C: the terminal's group, not the mount's session
	select {
	case <-ended:
	case <-time.After(stopWithin):
		t.Fatalf("mount --background still ran %v after Ctrl-C\n%s", stopWithin, out.String())
	}
	alive := func() bool {
		st := processes(func(pid int, stat []string) bool { return pid == child && stat[0] != "Z" })
		return len(st) > 0
	}
	if !testutil.Eventually(stopWithin-time.Since(sent), func() bool { return !alive() }) {
		t.Fatalf("the mount process %d still ran %v after Ctrl-C of mount --background, before anything was mounted\n%s",
			child, time.Since(sent), out.String())
	}
	if isMounted(mnt) {
		t.Fatalf("%s is mounted after Ctrl-C of mount --background during its start-up", mnt)
	}
}

// Ctrl-C that reaches mount --background while its mount process is being started (forked, not yet
// running the program) stops that process too. Before, the handler was set up only after the start
// returned: a Ctrl-C in between killed the command and left the mount process to mount on its own.
// strace holds the mount process at the entry of its execve, and so holds the command inside its
// start (the fork is a vfork), until the interrupt has been sent.
func TestMountBackgroundInterruptedWhileItsMountProcessStarts(t *testing.T) {
	needStrace(t)
	e, _, clone, mnt, _, _ := embeddedMount(t, 1<<20)
	self := filepath.Join(binDir, "git-xet-transfer")
	fg := e.cmd(clone, "strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=execve",
		"-e", "inject=execve:delay_enter=400000", self, "mount", "--background", mnt)
	outPath := filepath.Join(e.home, "mount-background.out")
	outFile, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	fg.Stdout, fg.Stderr = outFile, outFile
	output := func() string { b, _ := os.ReadFile(outPath); return string(b) }
	newProcessGroup(fg)
	if err := fg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		killProcessGroup(fg) // strace and the command; the mount process has a session of its own
		for _, pid := range mountProcesses(mnt) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if isMounted(mnt) {
			exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
	})
	// The command is strace's child; its child held at an execve of the program is the mount process.
	childOf := func(parent int) []int {
		return processes(func(pid int, stat []string) bool { return stat[1] == strconv.Itoa(parent) && stat[0] != "Z" })
	}
	var cmdPid, child int
	if !testutil.Eventually(30*time.Second, func() bool {
		for _, p := range childOf(fg.Process.Pid) {
			for _, c := range childOf(p) {
				if execveTarget(c) == self {
					cmdPid, child = p, c
				}
			}
		}
		return child != 0
	}) {
		t.Fatalf("mount --background started no mount process\n%s", output())
	}
	sent := time.Now()
	syscall.Kill(cmdPid, syscall.SIGINT)
	running := func(pid int) bool {
		return len(processes(func(p int, stat []string) bool { return p == pid && stat[0] != "Z" })) > 0
	}
	if !testutil.Eventually(stopWithin, func() bool { return !running(cmdPid) }) {
		t.Fatalf("mount --background still ran %v after Ctrl-C\n%s", stopWithin, output())
	}
	if !testutil.Eventually(stopWithin-time.Since(sent), func() bool { return !running(child) }) {
		t.Fatalf("the mount process %d still ran %v after Ctrl-C of mount --background, before anything was mounted (mounted: %v)\n%s",
			child, time.Since(sent), isMounted(mnt), output())
	}
	if isMounted(mnt) {
		t.Fatalf("%s is mounted after Ctrl-C of mount --background during its start", mnt)
	}
	if !strings.Contains(output(), "interrupted before") {
		t.Fatalf("mount --background said nothing of the interrupt:\n%s", output())
	}
}

// Against xet-server (batch mode): listing the tree fetches no xorb; the bytes read equal the
// file's; four readers at different offsets at once get the right bytes and no byte of a xorb is
// fetched twice; after v1 was read whole, reading v2 (a 0.5 % edit) fetches about what changed.
func TestMountXetServer(t *testing.T) {
	needFUSE(t)
	rs := startRecordingServer(t, nil)
	e := newEnv(t)
	e.install()
	work, _ := e.localRepo(repoOpts{lfsURL: rs.url + "/team/repo.git/info/lfs"})
	const size = 24 << 20
	clone, v1, v2 := e.mountRepo(work, size)
	mnt := filepath.Join(e.home, "mnt")
	e.mount(clone, mnt, "--rev", "v1")
	if out, err := exec.Command("ls", "-lR", mnt).CombinedOutput(); err != nil || !strings.Contains(string(out), "tensor.bin") {
		t.Fatalf("ls -lR: %v %s", err, out)
	}
	if n, _ := rs.xorbRanges(); n != 0 || rs.footers != 0 {
		t.Fatalf("ls -lR fetched %d xorb ranges and %d footers", n, rs.footers)
	}
	done := make(chan string, 4)
	for r := 0; r < 4; r++ {
		go func() {
			off := int64(r) * size / 4
			for k := int64(0); k < 4<<20; k += 1 << 20 {
				got, err := readRangeErr(filepath.Join(mnt, "big.bin"), off+k, 1<<20)
				if err != nil || !bytes.Equal(got, v1[off+k:off+k+1<<20]) {
					done <- fmt.Sprintf("reader %d: wrong bytes or %v", r, err)
					return
				}
			}
			done <- ""
		}()
	}
	for r := 0; r < 4; r++ {
		if msg := <-done; msg != "" {
			t.Fatal(msg)
		}
	}
	if o := rs.overlapping(t); o != "" {
		t.Fatalf("a byte of a xorb was fetched twice: %s", o)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "big.bin")); err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("v1 read whole: %v", err)
	}
	if o := rs.overlapping(t); o != "" {
		t.Fatalf("a byte of a xorb was fetched twice: %s", o)
	}
	e.cmd(clone, "git", "xet-transfer", "unmount", mnt).Run()

	_, before := rs.xorbRanges()
	e.mount(clone, mnt)
	if got, err := os.ReadFile(filepath.Join(mnt, "big.bin")); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("v2 read whole: %v", err)
	}
	_, after := rs.xorbRanges()
	// What changed is what the push of v2 sent: its five patches of 0.1 % change a chunk or two
	// each (64 KiB on average), more than 0.5 % of a file this small.
	ups := e.logLines(`"op":"upload"`, "transfer complete", `"size":`+strconv.Itoa(size))
	changed := newBytes(t, ups[len(ups)-1])
	t.Logf("reading v2 whole after v1: %d bytes of xorbs (%.2f %% of the file); the push of v2 sent %d", after-before, 100*float64(after-before)/size, changed)
	if after-before > changed+64<<10 {
		t.Errorf("reading v2 after v1 fetched %d bytes; what changed (the push of v2) is %d", after-before, changed)
	}
	checkMountedTree(t, work, mnt, v2)
}

// Through the Hub emulator (install --hub, a read token): the mount reads what was pushed.
func TestMountHub(t *testing.T) {
	needFUSE(t)
	h := startHub(t, time.Minute)
	e := hubEnv(t, h)
	e.vars = append(e.vars, "HF_TOKEN="+hubWriteToken)
	work, _ := hubRepo(t, e, h, "org/model")
	clone, _, v2 := e.mountRepo(work, 12<<20)
	e.vars = append(e.vars, "HF_TOKEN="+hubReadToken)
	mnt := filepath.Join(e.home, "mnt")
	e.mount(clone, mnt)
	checkMountedTree(t, work, mnt, v2)
	if n := h.requests("GET", "/xet-bridge-us/"); n != 0 {
		t.Errorf("%d reads went through the bridge, want 0", n)
	}
	if h.requests("GET", "/api/models/org/model/xet-read-token/") < 1 {
		t.Error("the mount did not take a read token at the Hub's route")
	}
}

// Objects in .git/lfs/objects are read from there: a pulled object whole, and the chunks a fetched
// version shares with another version through the chunk index; neither is fetched. With
// lfs.storage set, git-lfs keeps them there, and so does the mount its chunk cache.
func TestMountReadsLocalObjects(t *testing.T) {
	needFUSE(t)
	for _, storage := range []bool{false, true} {
		t.Run(map[bool]string{false: "git dir", true: "lfs.storage"}[storage], func(t *testing.T) {
			mountReadsLocalObjects(t, storage)
		})
	}
}

func mountReadsLocalObjects(t *testing.T, storage bool) {
	rs := startRecordingServer(t, nil)
	e := newEnv(t)
	e.install()
	work, _ := e.localRepo(repoOpts{lfsURL: rs.url + "/team/repo.git/info/lfs"})
	const size = 16 << 20
	clone, v1, v2 := e.mountRepo(work, size)
	lfsDir := filepath.Join(clone, ".git", "lfs")
	if storage {
		lfsDir = filepath.Join(e.home, "lfs-storage")
		e.git(clone, "config", "lfs.storage", lfsDir)
	}
	e.git(clone, "lfs", "fetch", "origin", "v1") // v1's objects, and their chunks in the chunk index
	if _, err := os.Stat(filepath.Join(lfsDir, "objects", oidOf(v1)[:2], oidOf(v1)[2:4], oidOf(v1))); err != nil {
		t.Fatalf("git lfs fetch did not store v1 where git-lfs keeps objects: %v", err)
	}
	mnt := filepath.Join(e.home, "mnt")
	e.mount(clone, mnt, "--rev", "v1")
	n0, b0 := rs.xorbRanges()
	if got, err := os.ReadFile(filepath.Join(mnt, "big.bin")); err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("v1: %v", err)
	}
	if n, b := rs.xorbRanges(); n != n0 || b != b0 {
		t.Fatalf("reading an object in %s fetched %d ranges (%d bytes)", lfsDir, n-n0, b-b0)
	}
	e.cmd(clone, "git", "xet-transfer", "unmount", mnt).Run()
	e.mount(clone, mnt)
	if got, err := os.ReadFile(filepath.Join(mnt, "big.bin")); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("v2: %v", err)
	}
	ups := e.logLines(`"op":"upload"`, "transfer complete", `"size":`+strconv.Itoa(size))
	changed := newBytes(t, ups[len(ups)-1])
	if _, b := rs.xorbRanges(); b-b0 > changed+64<<10 {
		t.Fatalf("v2, sharing all but %d bytes with v1 in %s, fetched %d", changed, lfsDir, b-b0)
	}
	if _, err := os.Stat(filepath.Join(lfsDir, "xet", "mount-cache")); err != nil {
		t.Fatalf("the mount's chunk cache is not beside the objects: %v", err)
	}
}

// A CAS that answers with damaged bytes gives EIO, never the damaged bytes; once it answers right
// again, the file reads whole. The reason is in the log. A CAS that stops sending fails the read
// after the stall timeout, not later.
func TestMountCASFaultGivesEIO(t *testing.T) {
	needFUSE(t)
	rs := startRecordingServer(t, nil)
	proxy, err := chaos.New(rs.url)
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	e := newEnv(t)
	e.install()
	work, _ := e.localRepo(repoOpts{lfsURL: ps.URL + "/team/repo.git/info/lfs"})
	clone, _, v2 := e.mountRepo(work, 6<<20)
	e.git(clone, "config", "lfs.transfer.maxretries", "1")
	e.git(clone, "config", "lfs.transfer.maxretrydelay", "0")
	mnt := filepath.Join(e.home, "mnt")
	e.vars = append(e.vars, "GIT_XET_STALL_TIMEOUT=2s")
	e.mount(clone, mnt)
	proxy.Add(chaos.Rule{Method: "GET", Prefix: "/xorbs/", Times: 1 << 20, Kind: chaos.Flip, Offset: 3000})
	out, err := exec.Command("cat", filepath.Join(mnt, "big.bin")).Output()
	if err == nil {
		t.Fatal("cat of a file whose every fetch is damaged succeeded")
	}
	if !bytes.Equal(out, v2[:len(out)]) {
		t.Fatalf("cat returned %d bytes that are not the file's", len(out))
	}
	if len(e.logLines("mount: read failed (EIO)", "does not hash")) == 0 && len(e.logLines("mount: read failed (EIO)", "does not verify")) == 0 {
		t.Errorf("no read failure with its reason in the log")
	}
	proxy.Clear()
	if got, err := os.ReadFile(filepath.Join(mnt, "big.bin")); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("after the CAS recovered: %v", err)
	}
	proxy.Add(chaos.Rule{Method: "GET", Prefix: "/xorbs/", Times: 1 << 20, Kind: chaos.Stall, Offset: 0})
	start := time.Now()
	if _, err := os.ReadFile(filepath.Join(mnt, "weights", "tensor.bin")); err == nil {
		t.Fatal("a read from a CAS that sends nothing succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("a read from a stalled CAS failed after %v, the stall timeout is 2 s", d)
	}
}

// The chunk cache stays within --cache-size while more than it is read, and what it evicted is
// fetched again when read again.
func TestMountCacheBound(t *testing.T) {
	needFUSE(t)
	rs := startRecordingServer(t, nil)
	e := newEnv(t)
	e.install()
	work, _ := e.localRepo(repoOpts{lfsURL: rs.url + "/team/repo.git/info/lfs"})
	clone, v1, v2 := e.mountRepo(work, 24<<20)
	const limit = 16 << 20
	cacheDir := filepath.Join(clone, ".git", "lfs", "xet", "mount-cache")
	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the cache's size all along
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if n := duBytes(cacheDir); n > peak {
				peak = n
			}
		}
	}()
	mnt := filepath.Join(e.home, "mnt")
	e.mount(clone, mnt, "--cache-size", "16MiB", "--rev", "v1")
	for _, want := range [][]byte{v1, v1} {
		if got, err := os.ReadFile(filepath.Join(mnt, "big.bin")); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read: %v", err)
		}
	}
	e.cmd(clone, "git", "xet-transfer", "unmount", mnt).Run()
	_, before := rs.xorbRanges()
	e.mount(clone, mnt, "--cache-size", "16MiB")
	if got, err := os.ReadFile(filepath.Join(mnt, "big.bin")); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("v2: %v", err)
	}
	close(stop)
	<-sampled
	if n := duBytes(cacheDir); n > peak {
		peak = n
	}
	t.Logf("cache peak %d bytes, limit %d", peak, limit)
	if peak > limit || peak < limit/2 {
		t.Fatalf("the cache took up to %d bytes, limit %d", peak, limit)
	}
	if _, after := rs.xorbRanges(); after-before < 4<<20 {
		t.Fatalf("v2 after v1 through a 16 MiB cache fetched %d bytes: v1's chunks were not evicted", after-before)
	}
}

// duBytes is what the files and directories under dir take on disk (du's count).
func duBytes(dir string) int64 {
	out, err := exec.Command("du", "-s", "-B1", dir).Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	return n
}

// The example docs/examples/safetensors_mount.py reads a safetensors header and one tensor through
// the mount, with Python's standard library: it prints the tensor's values, and what crossed the
// network is about the header and that tensor, not the file.
func TestMountSafetensorsExample(t *testing.T) {
	needFUSE(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is missing (required under CI=true)")
		}
		t.Skip("python3 is missing")
	}
	rs := startRecordingServer(t, nil)
	e := newEnv(t)
	e.install()
	work, _ := e.localRepo(repoOpts{lfsURL: rs.url + "/team/repo.git/info/lfs", patterns: []string{"*.safetensors"}})
	model, head := safetensors(t, []tensorSpec{{"embed", 1024, 1024}, {"layer.0", 2048, 2048}, {"head", 256, 1024}})
	writeFile(t, filepath.Join(work, "model.safetensors"), model)
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "model")
	e.git(work, "push", "-q", "origin", "main")
	clone := filepath.Join(e.home, "clone")
	cl := e.cmd("", "git", "clone", "-q", e.originOf(work), clone)
	cl.Env = append(cl.Env, "GIT_LFS_SKIP_SMUDGE=1")
	if out, err := cl.CombinedOutput(); err != nil {
		t.Fatalf("clone: %v %s", err, out)
	}
	mnt := filepath.Join(e.home, "mnt")
	e.mount(clone, mnt)
	out, err := exec.Command(py, "../docs/examples/safetensors_mount.py", filepath.Join(mnt, "model.safetensors"), "head").CombinedOutput()
	if err != nil {
		t.Fatalf("the example: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	for _, want := range []string{"3 tensors: embed, head, layer.0", "head: dtype F32, shape [256, 1024], 1048576 bytes", "first values: " + head} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the example's output lacks %q", want)
		}
	}
	_, moved := rs.xorbRanges()
	t.Logf("bytes of xorbs fetched: %d of a %d-byte file", moved, len(model))
	if moved > 3<<20 {
		t.Errorf("reading the header and a 1 MiB tensor fetched %d bytes of a %d-byte file", moved, len(model))
	}
}

type tensorSpec struct {
	name       string
	rows, cols int
}

// safetensors builds a safetensors file of F32 tensors (their values a smooth signal) and returns
// it with the first four values of the last tensor as the example prints them.
func safetensors(t *testing.T, specs []tensorSpec) ([]byte, string) {
	t.Helper()
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	var last []byte
	for i, s := range specs {
		b := make([]byte, 4*s.rows*s.cols) // each tensor a smooth signal of its own, as weights look
		for k := 0; k < s.rows*s.cols; k++ {
			binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(float32(math.Sin(float64(k+7919*i)/97)*0.02)))
		}
		hdr[s.name] = map[string]any{"dtype": "F32", "shape": []int{s.rows, s.cols}, "data_offsets": []int{len(data), len(data) + len(b)}}
		data = append(data, b...)
		last = b
	}
	j, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	for len(j)%8 != 0 {
		j = append(j, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(j)))
	out = append(append(out, j...), data...)
	var vals []string
	for k := 0; k < 4; k++ {
		v := math.Float32frombits(binary.LittleEndian.Uint32(last[4*k:]))
		vals = append(vals, strconv.FormatFloat(float64(v), 'g', 6, 32))
	}
	return out, strings.Join(vals, ", ")
}

// A directory nested deeper than any checkout can hold (a path past 4,096 bytes) is not listed,
// ENAMETOOLONG, as git's checkout refuses it: each node of the mount keeps its path, and a walk
// down 2,000 levels of long names cost memory growing with the square of the depth. The levels
// above it list as usual.
func TestMountRefusesPathsNoCheckoutHolds(t *testing.T) {
	needFUSE(t)
	e := newEnv(t)
	e.install()
	work, _ := e.localRepo(repoOpts{})
	var stream strings.Builder
	fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter t <t@example.test> 0 +0000\ndata 4\ndeep\nM 100644 inline %sf.txt\ndata 2\nhi\n", strings.Repeat("d/", 2100))
	fi := e.cmd(work, "git", "fast-import", "--quiet")
	fi.Stdin = strings.NewReader(stream.String())
	if out, err := fi.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
	e.git(work, "reset", "-q", "--soft", "main")
	mnt := filepath.Join(e.home, "mnt")
	e.mount(work, mnt)
	fd, err := syscall.Open(mnt, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	level := 0
	for ; level < 2100; level++ {
		next, err := syscall.Openat(fd, "d", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			syscall.Close(fd)
			if err != syscall.ENAMETOOLONG || level < 2040 {
				t.Fatalf("level %d: %v, want ENAMETOOLONG past 4,096 bytes of path", level+1, err)
			}
			return
		}
		syscall.Close(fd)
		fd = next
	}
	syscall.Close(fd)
	t.Fatalf("the mount listed all %d levels, %d bytes of path", level, 2*level)
}
