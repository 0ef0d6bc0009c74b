//go:build linux

package test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/netem"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// stopWithin is how long every agent process may live on after Ctrl-C.
const stopWithin = 2 * time.Second

// Ctrl-C in the terminal of a push or a clone through a slow link (SIGINT to the command's process
// group, as a terminal sends it): every agent process has exited within stopWithin, as plain
// git-lfs's transfers stop; nothing stored is damaged (fsck), a clone hands git-lfs no damaged
// object, and the push repeated sends no xorb the server already stored.
func TestInterruptStopsAgents(t *testing.T) {
	for _, c := range []struct {
		op   string
		mbit int
	}{{"push", 40}, {"push", 5}, {"clone", 40}, {"clone", 5}} {
		t.Run(fmt.Sprintf("%s-%dMbit", c.op, c.mbit), func(t *testing.T) {
			s := startCountedServer(t)
			e := newEnv(t)
			e.install()
			work, remote := batchRepo(t, e, s.url+"/team/interrupt.git/info/lfs")
			// Random files, uploaded side by side by the leader of the push's agents for the processes
			// git-lfs gave them to: one of two xorbs (64 MiB, and about 10 MiB, stored first: the push
			// asks the server about xorbs of 8 MiB or more before it sends them, so a repeated push
			// sends neither again once stored) and three of one xorb.
			for i, mib := range []int{74, 20, 20, 20} {
				writeFile(t, filepath.Join(work, fmt.Sprintf("f%d.bin", i)), testutil.RandomBytes(mib<<20, uint64(900+i)))
			}
			e.git(work, "add", ".")
			e.git(work, "commit", "-q", "-m", "files")
			if c.op == "push" {
				interruptPush(t, e, s, work, remote, c.mbit)
			} else {
				interruptClone(t, e, s, work, remote, c.mbit)
			}
		})
	}
}

func interruptPush(t *testing.T, e *env, s *countedServer, work, remote string, mbit int) {
	s.shape(t, netem.Profile{BitsPerSec: int64(mbit) * 1e6, RTT: 40 * time.Millisecond})
	midway := func() bool { return s.xorbBytes.Load() >= 1<<20 }
	if mbit >= 40 { // fast enough to see the large file's smaller xorb stored in a test's time
		midway = func() bool { return s.stored() >= 1 }
	}
	stopped := interruptWhen(t, e, work, "push", midway, "git", "push", "origin", "main")
	before := s.stored()
	t.Logf("push through %d Mbit/s: the agents stopped %v after Ctrl-C, with %d xorbs of 8 MiB or more stored", mbit, stopped, before)
	s.shape(t, netem.Profile{})
	s.resent.Store(0)
	e.git(work, "push", "-q", "origin", "main")
	if n := s.resent.Load(); n > 0 {
		t.Errorf("the repeated push sent %d of the %d xorbs stored before Ctrl-C again", n, before)
	}
	s.fsck(t)
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if n := sameTree(t, work, clone); n < 4 {
		t.Fatalf("compared %d files, want 4", n)
	}
}

func interruptClone(t *testing.T, e *env, s *countedServer, work, remote string, mbit int) {
	e.git(work, "push", "-q", "origin", "main")
	s.shape(t, netem.Profile{BitsPerSec: int64(mbit) * 1e6, RTT: 40 * time.Millisecond})
	clone := filepath.Join(e.home, "clone")
	_, down0 := s.link().Sent()
	midway := func() bool { _, down := s.link().Sent(); return down-down0 >= 1<<20 }
	stopped := interruptWhen(t, e, e.home, "clone", midway, "git", "clone", "-q", remote, clone)
	t.Logf("clone through %d Mbit/s: the agents stopped %v after Ctrl-C", mbit, stopped)
	s.shape(t, netem.Profile{})
	checkLFSObjects(t, clone)
	s.fsck(t)
	e.git(clone, "reset", "-q", "--hard") // the checkout Ctrl-C cut short, its LFS files fetched now
	if n := sameTree(t, work, clone); n < 4 {
		t.Fatalf("compared %d files, want 4", n)
	}
}

// Two pushes of one repository at once share one leader of their agents (one group: the same
// repository, remote and server). The git-lfs of the push whose agents only handed their
// conversations to that leader is killed mid-way: the leader's uploads for it stop within a second
// (the server sees them end), and the other push completes. Pushed again, everything is there.
func TestFollowerGitLFSKilled(t *testing.T) {
	s := startCountedServer(t)
	e := newEnv(t)
	e.install()
	work, remote := batchRepo(t, e, s.url+"/team/two.git/info/lfs")
	writeFile(t, filepath.Join(work, "README"), []byte("two pushes\n"))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "base")
	// Each push's files have a size of their own: the server tells their xorbs apart by it.
	const leaderMiB, doomedMiB = 24, 20
	for _, b := range []struct {
		name string
		mib  int
	}{{"lead", leaderMiB}, {"doomed", doomedMiB}} {
		e.git(work, "checkout", "-q", "-b", b.name, "main")
		for i := range 2 {
			writeFile(t, filepath.Join(work, fmt.Sprintf("%s%d.bin", b.name, i)), testutil.RandomBytes(b.mib<<20, uint64(b.mib*10+i)))
		}
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", b.name)
	}
	s.shape(t, netem.Profile{BitsPerSec: 40e6, RTT: 40 * time.Millisecond})
	lead := startInGroup(t, e, work, "git", "push", "origin", "lead")
	if !testutil.Eventually(time.Minute, func() bool { return s.receiving(leaderMiB) > 0 && len(e.logPIDs("share: leading")) > 0 }) {
		t.Fatalf("the first push was not under way within a minute\n%s", lead.out.String())
	}
	doomed := startInGroup(t, e, work, "git", "push", "origin", "doomed")
	if !testutil.Eventually(time.Minute, func() bool { return s.receiving(doomedMiB) == 2 && s.xorbBytes.Load() >= 8<<20 }) {
		t.Fatalf("the second push's uploads were not under way within a minute\n%s", doomed.out.String())
	}
	gitLFS := groupProcesses(doomed.pgid(), "git-lfs")
	if len(gitLFS) != 1 {
		t.Fatalf("the second push runs %d git-lfs processes (%v), want 1", len(gitLFS), gitLFS)
	}
	for pid := range e.logPIDs("share: leading") {
		if slices.Contains(groupProcesses(doomed.pgid(), "git-xet-transfer"), pid) {
			t.Fatalf("the leader (%d) is an agent of the push to be killed", pid)
		}
	}
	killed := time.Now()
	syscall.Kill(gitLFS[0], syscall.SIGKILL)
	if !testutil.Eventually(10*time.Second, func() bool { return s.receiving(doomedMiB) == 0 }) {
		t.Fatal("the uploads for the killed git-lfs went on 10 s after it was killed")
	}
	stopped := time.Since(killed)
	t.Logf("the leader's uploads for the killed git-lfs stopped %v after the kill", stopped)
	if stopped > time.Second {
		t.Errorf("the uploads for the killed git-lfs stopped %v after the kill, want within 1 s", stopped)
	}
	if err := lead.wait(3 * time.Minute); err != nil {
		t.Fatalf("the other push failed: %v\n%s", err, lead.out.String())
	}
	doomed.wait(time.Minute)
	s.shape(t, netem.Profile{})
	e.git(work, "push", "-q", "origin", "doomed")
	s.fsck(t)
	for _, b := range []string{"lead", "doomed"} {
		clone := filepath.Join(e.home, "clone-"+b)
		e.git("", "clone", "-q", "-b", b, remote, clone)
		e.git(work, "checkout", "-q", b)
		if n := sameTree(t, work, clone); n != 5 { // with README, .gitattributes, .lfsconfig
			t.Fatalf("branch %s: compared %d files, want 5", b, n)
		}
	}
}

// groupCmd is a command running in a process group of its own.
type groupCmd struct {
	cmd   *exec.Cmd
	out   *strings.Builder
	ended chan error
}

// startInGroup starts the command in dir in a process group of its own (killed at the test's end).
func startInGroup(t *testing.T, e *env, dir, name string, args ...string) *groupCmd {
	t.Helper()
	c := &groupCmd{cmd: e.cmd(dir, name, args...), out: &strings.Builder{}, ended: make(chan error, 1)}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	newProcessGroup(c.cmd)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.ended <- c.cmd.Wait() }()
	t.Cleanup(func() { syscall.Kill(-c.pgid(), syscall.SIGKILL); c.wait(time.Minute) })
	return c
}

func (c *groupCmd) pgid() int { return c.cmd.Process.Pid }

// wait returns the command's end, or an error when it has not ended within d.
func (c *groupCmd) wait(d time.Duration) error {
	select {
	case err := <-c.ended:
		c.ended <- err
		return err
	case <-time.After(d):
		return fmt.Errorf("still running after %v", d)
	}
}

// interruptWhen runs the command in dir in a process group of its own, sends the group SIGINT once
// midway holds (the transfer is under way), and returns how long the agent processes of the group
// lived on after it. It fails the test when some were still running after stopWithin (it then kills
// the group), or when the command was not under way or did not end.
func interruptWhen(t *testing.T, e *env, dir, what string, midway func() bool, name string, args ...string) time.Duration {
	t.Helper()
	cmd := e.cmd(dir, name, args...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	newProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	pgid := cmd.Process.Pid
	if !testutil.Eventually(2*time.Minute, func() bool { return midway() && len(groupAgents(pgid)) > 0 }) {
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-ended
		t.Fatalf("the %s was not under way within 2 minutes\n%s", what, out.String())
	}
	agents := groupAgents(pgid)
	sent := time.Now()
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	gone := testutil.Eventually(stopWithin+3*time.Second, func() bool { return len(groupAgents(pgid)) == 0 })
	stopped := time.Since(sent)
	left := groupAgents(pgid)
	syscall.Kill(-pgid, syscall.SIGKILL) // whatever is left, the test's end
	select {
	case err := <-ended:
		if err == nil {
			t.Errorf("the %s succeeded although it was interrupted mid-way\n%s", what, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the %s did not end after SIGKILL\n%s", what, out.String())
	}
	if !gone || stopped > stopWithin {
		t.Fatalf("%d agent processes (of %d) still ran %v after Ctrl-C of the %s (want none after %v)", len(left), len(agents), stopped, what, stopWithin)
	}
	return stopped
}

// groupAgents lists the live git-xet-transfer (and git-xet-transfer-agent) processes of process
// group pgid.
func groupAgents(pgid int) []int { return groupProcesses(pgid, "git-xet-transfer") }

// groupProcesses lists the live processes of process group pgid whose executable's name begins
// with prefix.
func groupProcesses(pgid int, prefix string) []int {
	return processes(func(pid int, stat []string) bool {
		if len(stat) < 3 || stat[0] == "Z" || stat[2] != strconv.Itoa(pgid) {
			return false
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		return err == nil && strings.HasPrefix(filepath.Base(exe), prefix)
	})
}

// resumeCheckBytes: the agent asks the server whether it holds a xorb this big before sending it
// (client.ResumeCheckBytes); smaller ones are sent again after an interruption, by design.
const resumeCheckBytes = 8 << 20

// countedServer is xet-server's handler behind an emulated link whose profile the test changes:
// the URLs it hands out name the link. It counts the xorb bodies it receives, the xorbs of
// resumeCheckBytes or more it stored, and the uploads of such a xorb it had already stored
// (resent).
type countedServer struct {
	url, addr, data string
	xorbBytes       atomic.Int64 // bytes of xorb upload bodies read
	resent          atomic.Int64 // uploads of large xorbs stored before

	mu       sync.Mutex
	saved    map[string]bool // large xorbs stored (an upload answered 2xx)
	inFlight map[int64]int   // xorb uploads being received, by MiB of their body
	ln       net.Listener
	cur      *netem.Link
	back     string
}

func startCountedServer(t *testing.T) *countedServer {
	t.Helper()
	s := &countedServer{data: t.TempDir(), saved: map[string]bool{}, inFlight: map[int64]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln, s.addr = ln, ln.Addr().String()
	s.url = "http://" + s.addr
	h := serverHandler(t, s.data, "", func(c *server.Config) { c.PublicURL = s.url })
	back := &http.Server{Handler: s.count(h)}
	bl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.back = bl.Addr().String()
	go back.Serve(bl)
	t.Cleanup(func() {
		s.mu.Lock()
		s.ln.Close()
		s.mu.Unlock()
		back.Close()
	})
	s.cur = netem.New(netem.Profile{})
	go s.cur.Serve(ln, s.back)
	return s
}

// shape puts a link of profile p in front of the server from now on (connections open go on
// through the old one).
func (s *countedServer) shape(t *testing.T, p netem.Profile) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ln.Close()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	s.ln, s.cur = ln, netem.New(p)
	go s.cur.Serve(ln, s.back)
}

func (s *countedServer) link() *netem.Link {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (s *countedServer) stored() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.saved)
}

func (s *countedServer) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, x, ok := strings.Cut(r.URL.Path, "/v1/xorbs/default/")
		if r.Method != http.MethodPost || !ok || r.ContentLength < resumeCheckBytes {
			if ok {
				r.Body = countedBody{r.Body, &s.xorbBytes}
			}
			h.ServeHTTP(w, r)
			return
		}
		mib := r.ContentLength >> 20
		s.mu.Lock()
		if s.saved[x] {
			s.resent.Add(1)
		}
		s.inFlight[mib]++
		s.mu.Unlock()
		r.Body = countedBody{r.Body, &s.xorbBytes}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		s.mu.Lock()
		s.inFlight[mib]--
		if sw.code/100 == 2 || sw.code == 0 {
			s.saved[x] = true
		}
		s.mu.Unlock()
	})
}

// receiving is how many xorb uploads of mib MiB (their body's size, rounded down) are being
// received.
func (s *countedServer) receiving(mib int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight[mib]
}

func (s *countedServer) fsck(t *testing.T) {
	t.Helper()
	if report, ok, err := store.Fsck(context.Background(), s.data, store.FsckOptions{}); err != nil || !ok {
		t.Errorf("store check: %v\n%s", err, report)
	}
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}
