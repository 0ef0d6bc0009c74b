//go:build linux

package test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// needFUSE skips a test where FUSE cannot be used (no /dev/fuse, no fusermount3), and fails it
// under CI=true (.ci/run installs fuse3).
func needFUSE(t *testing.T) {
	t.Helper()
	why := ""
	if _, err := os.Stat("/dev/fuse"); err != nil {
		why = "/dev/fuse is missing"
	} else if _, err := exec.LookPath("fusermount3"); err != nil {
		why = "fusermount3 is missing (apt-get install fuse3)"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the mount tests need FUSE: %s (required under CI=true; .ci/run installs fuse3)", why)
	}
	t.Skip(why)
}

// mountProc is `git xet-transfer mount` running in the foreground.
type mountProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	dir  string
	out  *syncBuffer
	done chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// mount runs `git-xet-transfer mount ARGS... MNT` in repo and waits until MNT is mounted; the
// test's end unmounts it. (The program itself, not `git xet-transfer`: a signal to it is a signal
// to the mount, not to git.)
func (e *env) mount(repo, mnt string, args ...string) *mountProc {
	e.t.Helper()
	cmd := e.cmd(repo, filepath.Join(binDir, "git-xet-transfer"), append(append([]string{"mount"}, args...), mnt)...)
	if !strings.Contains(strings.Join(cmd.Env, "\n"), "GIT_XET_STALL_TIMEOUT=") {
		// A read that cannot be served fails (EIO, logged) after this, rather than after the
		// default 2 minutes: a test that goes wrong fails with the reason instead of timing out.
		cmd.Env = append(cmd.Env, "GIT_XET_STALL_TIMEOUT=30s")
	}
	m := &mountProc{t: e.t, cmd: cmd, dir: mnt, out: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = m.out, m.out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { m.done <- cmd.Wait() }()
	e.t.Cleanup(func() {
		if isMounted(mnt) {
			cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
		if isMounted(mnt) {
			exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
	})
	// Up when the process says so: it has mounted and answered its first requests. (Its mount shows
	// in /proc/self/mountinfo, and answers, a moment before: a SIGKILL in that moment, while go-fuse's
	// mount still waits on its own mount point, leaves a process no signal ends.)
	up := func() bool { return strings.Contains(m.out.String(), "mounted ") && isMounted(mnt) }
	if !testutil.Eventually(30*time.Second, func() bool { return up() || m.exited() }) || !up() {
		e.t.Fatalf("mount did not come up:\n%s", m.out.String())
	}
	return m
}

func (m *mountProc) exited() bool {
	select {
	case err := <-m.done:
		m.done <- err
		return true
	default:
		return false
	}
}

// wait waits for the mount process to end, at most d, and returns its error.
func (m *mountProc) wait(d time.Duration) (error, bool) {
	select {
	case err := <-m.done:
		m.done <- err
		return err, true
	case <-time.After(d):
		return nil, false
	}
}

// isMounted reports whether git-xet-transfer's file system is mounted at dir.
func isMounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && f[4] == dir && strings.Contains(l, " - fuse.git-xet-transfer ") {
			return true
		}
	}
	return false
}

// recordingServer is xet-server on loopback with a record of the xorb ranges it sent.
type recordingServer struct {
	url     string
	mu      sync.Mutex
	ranges  map[string][]string // xorb path → Range headers of its GETs (footers excluded)
	footers int
	xorbOut int64 // body bytes of xorb answers (ranges and footers)
}

func startRecordingServer(t *testing.T, wrap func(http.Handler) http.Handler) *recordingServer {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	srv, err := server.New(server.Config{Store: st, Ingest: &server.UploadIngester{Store: st, Policy: xorb.PolicyAuto, Log: zerolog.Nop()},
		Secret: secret, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	rs := &recordingServer{ranges: map[string][]string{}}
	var h http.Handler = rs.record(srv.Handler())
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	rs.url = hs.URL
	return rs
}

func (rs *recordingServer) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/xorbs/") {
			next.ServeHTTP(w, r)
			return
		}
		rng := r.Header.Get("Range")
		rs.mu.Lock()
		if strings.HasPrefix(rng, "bytes=-") {
			rs.footers++
		} else {
			rs.ranges[r.URL.Path] = append(rs.ranges[r.URL.Path], rng)
		}
		rs.mu.Unlock()
		cw := &countingWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		rs.mu.Lock()
		rs.xorbOut += cw.n
		rs.mu.Unlock()
	})
}

// countingWriter counts the body bytes of an answer.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// xorbRanges is how many xorb ranges were fetched, and the bytes sent for xorbs.
func (rs *recordingServer) xorbRanges() (int, int64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := 0
	for _, r := range rs.ranges {
		n += len(r)
	}
	return n, rs.xorbOut
}

// overlapping returns two ranges of one xorb that share a byte, if any were fetched.
func (rs *recordingServer) overlapping(t *testing.T) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for x, hdrs := range rs.ranges {
		var spans [][2]int64
		for _, h := range hdrs {
			for _, part := range strings.Split(strings.TrimPrefix(h, "bytes="), ",") {
				var a, b int64
				if _, err := fmt.Sscanf(part, "%d-%d", &a, &b); err != nil {
					t.Fatalf("range header %q: %v", h, err)
				}
				for _, s := range spans {
					if a <= s[1] && s[0] <= b {
						return x + ": " + h
					}
				}
				spans = append(spans, [2]int64{a, b})
			}
		}
	}
	return ""
}

// readRange reads n bytes at off of path.
func readRange(t *testing.T, path string, off int64, n int) []byte {
	t.Helper()
	b, err := readRangeErr(path, off, n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readRangeErr is readRange for a goroutine other than the test's (which must not call t.Fatal).
func readRangeErr(path string, off int64, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	got, err := f.ReadAt(b, off)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading %d bytes at %d of %s: %w", n, off, path, err)
	}
	return b[:got], nil
}

// embeddedMount is the set-up of a mount test against the embedded store: a test env with the
// agent installed (FUSE needed), a work tree with a local remote, a clone of its pointers only
// (mountRepo's, with files of size) and the mount point to use.
func embeddedMount(t *testing.T, size int) (e *env, work, clone, mnt string, v1, v2 []byte) {
	t.Helper()
	needFUSE(t)
	e = newEnv(t)
	e.install()
	work, _ = e.localRepo(repoOpts{})
	clone, v1, v2 = e.mountRepo(work, size)
	return e, work, clone, filepath.Join(e.home, "mnt"), v1, v2
}

// mountRepo makes the usual world of the mount tests: big.bin (v1, tagged v1; then a 0.5 % edit,
// v2), a tensor file, a text file and a script, pushed from work; and a clone of it made with
// GIT_LFS_SKIP_SMUDGE=1 (pointers only). It returns the work tree, the clone and the versions of
// big.bin.
func (e *env) mountRepo(work string, size int) (clone string, v1, v2 []byte) {
	e.t.Helper()
	v1 = testutil.RandomBytes(size, 4242)
	writeFile(e.t, filepath.Join(work, "big.bin"), v1)
	writeFile(e.t, filepath.Join(work, "weights", "tensor.bin"), tensor(1<<20))
	writeFile(e.t, filepath.Join(work, "README.md"), []byte("# a model\n"))
	writeFile(e.t, filepath.Join(work, "run.sh"), []byte("#!/bin/sh\necho run\n"))
	os.Chmod(filepath.Join(work, "run.sh"), 0o755)
	os.Symlink("README.md", filepath.Join(work, "LINK"))
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "v1")
	e.git(work, "tag", "v1")
	v2 = append([]byte(nil), v1...)
	for i := 0; i < 5; i++ { // 0.5 %: five scattered patches of 0.1 %
		off := (i*2 + 1) * len(v2) / 10
		copy(v2[off:], testutil.RandomBytes(len(v2)/1000, uint64(500+i)))
	}
	writeFile(e.t, filepath.Join(work, "big.bin"), v2)
	e.git(work, "commit", "-qam", "v2")
	e.git(work, "push", "-q", "origin", "main", "v1")
	clone = filepath.Join(e.home, "clone")
	cl := e.cmd("", "git", "clone", "-q", e.originOf(work), clone)
	cl.Env = append(cl.Env, "GIT_LFS_SKIP_SMUDGE=1")
	if out, err := cl.CombinedOutput(); err != nil {
		e.t.Fatalf("clone: %v\n%s", err, out)
	}
	return clone, v1, v2
}

// originOf is the URL of work's origin.
func (e *env) originOf(work string) string {
	return strings.TrimSpace(e.git(work, "remote", "get-url", "origin"))
}

// mountProcesses lists the mount processes (started by --background: --ready-fd) that serve dir.
func mountProcesses(dir string) []int {
	return processes(func(pid int, _ []string) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			return false
		}
		args := strings.Split(string(b), "\x00")
		return slices.Contains(args, "--ready-fd=3") && slices.Contains(args, dir)
	})
}

// execveTarget is the file a process stopped at the entry of execve is about to run (read from
// its memory), or "".
func execveTarget(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
	f := strings.Fields(string(b))
	if err != nil || len(f) < 2 || f[0] != strconv.Itoa(syscall.SYS_EXECVE) {
		return ""
	}
	addr, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
	if err != nil {
		return ""
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return ""
	}
	defer mem.Close()
	name := make([]byte, 4096)
	n, _ := mem.ReadAt(name, int64(addr))
	name, _, _ = bytes.Cut(name[:n], []byte{0})
	return string(name)
}
