// Package test holds the end-to-end tests: the real git and git-lfs binaries drive the
// git-xet-transfer binary (built once in TestMain) against local bare remotes (the embedded Xet
// store) and against xet-server's handler on loopback (batch mode). Every test gets its own HOME.
package test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// binDir holds the built git-xet-transfer; it goes first on the PATH of every git command.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	for _, tool := range []string{"git", "git-lfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				fmt.Fprintf(os.Stderr, "end-to-end tests need %s, which is not installed (required under CI=true)\n", tool)
				return 1
			}
			fmt.Fprintf(os.Stderr, "skipping end-to-end tests: %s is not installed\n", tool)
			return 0
		}
	}
	dir, err := os.MkdirTemp("", "xet-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	// Both programs, side by side as install.sh puts them: install writes the start-up agent
	// (git-xet-transfer-agent) as the agent git-lfs runs, so every test goes through it.
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../cmd/git-xet-transfer", "../cmd/git-xet-transfer-agent")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building git-xet-transfer and git-xet-transfer-agent: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// buildMu serializes buildTool: two callers must not build one binary at once, nor one replace a
// binary the other is running.
var buildMu sync.Mutex

// buildTool builds the program in pkg (relative to test/) into binDir as name, once per test
// binary, and returns its path.
func buildTool(t *testing.T, name, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	p := filepath.Join(binDir, name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if out, err := exec.Command("go", "build", "-o", p, pkg).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return p
}

// env is one test's world: a HOME, a config, the PATH with our binary first.
type env struct {
	t    *testing.T
	home string
	vars []string
	log  string // the agents' log file (JSON lines)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	home := t.TempDir()
	e := &env{t: t, home: home, log: filepath.Join(home, "agent.log")}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME" || k == "PATH" || k == "XDG_CONFIG_HOME" || k == "XDG_CACHE_HOME" || k == "GIT_TRACE":
		case strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "HF_"):
		default:
			e.vars = append(e.vars, kv)
		}
	}
	e.vars = append(e.vars,
		"HOME="+home,
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_XET_LOG="+e.log,
		"GIT_XET_LOG_LEVEL=debug",
	)
	e.git("", "config", "--global", "user.name", "Tester")
	e.git("", "config", "--global", "user.email", "tester@example.test")
	e.git("", "config", "--global", "init.defaultBranch", "main")
	e.git("", "config", "--global", "advice.detachedHead", "false")
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(e.log); err == nil {
				if len(b) > 8000 {
					b = b[len(b)-8000:]
				}
				t.Logf("agent log (tail):\n%s", b)
			}
		}
	})
	return e
}

// cmd builds a command in dir with the test's environment.
func (e *env) cmd(dir, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Dir = dir
	if c.Dir == "" {
		c.Dir = e.home
	}
	c.Env = e.vars
	return c
}

// git runs git and fails the test when it fails.
func (e *env) git(dir string, args ...string) string {
	e.t.Helper()
	out, err := e.gitErr(dir, args...)
	if err != nil {
		e.t.Fatalf("git %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

// gitErr runs git and returns its combined output and error.
func (e *env) gitErr(dir string, args ...string) (string, error) {
	e.t.Helper()
	var b bytes.Buffer
	c := e.cmd(dir, "git", args...)
	c.Stdout, c.Stderr = &b, &b
	err := c.Run()
	return b.String(), err
}

// install runs `git-xet-transfer install` (global).
func (e *env) install() {
	e.t.Helper()
	out, err := e.cmd("", filepath.Join(binDir, "git-xet-transfer"), "install").CombinedOutput()
	if err != nil {
		e.t.Fatalf("install: %v\n%s", err, out)
	}
}

// newRepo makes a work tree at dir tracking patterns with LFS.
func (e *env) newRepo(dir string, patterns ...string) {
	e.t.Helper()
	e.git("", "init", "-q", dir)
	for _, p := range patterns {
		e.git(dir, "lfs", "track", p)
	}
}

// repoOpts are the variants of a work tree with a local bare remote (localRepo, workTree). The
// zero value is the common case: $HOME/remote.git and $HOME/work, *.bin tracked, origin the
// remote's path (standalone mode: the agent keeps the LFS data in the remote's xet directory).
type repoOpts struct {
	remote   string   // the bare remote (default $HOME/remote.git)
	work     string   // the work tree (default $HOME/work)
	patterns []string // tracked with LFS (default *.bin)
	lfsURL   string   // set: the work tree's .lfsconfig sends LFS there (batch mode), not to the remote
	fileURL  bool     // origin is the remote's file:// URL, not its path
}

// localRepo makes a bare remote and a work tree whose origin it is, as o says, and returns their
// paths. The agent's configuration (install) is the caller's.
func (e *env) localRepo(o repoOpts) (work, remote string) {
	e.t.Helper()
	if o.remote == "" {
		o.remote = filepath.Join(e.home, "remote.git")
	}
	if o.work == "" {
		o.work = filepath.Join(e.home, "work")
	}
	e.bareRemote(o.remote)
	e.workTree(o.work, o.remote, o)
	return o.work, o.remote
}

// bareRemote makes an empty bare repository at path (a local remote).
func (e *env) bareRemote(path string) {
	e.t.Helper()
	e.git("", "init", "-q", "--bare", path)
}

// workTree makes a work tree at work whose origin is the bare remote at remote, with o's patterns,
// LFS URL and origin form (o.remote and o.work are not used).
func (e *env) workTree(work, remote string, o repoOpts) {
	e.t.Helper()
	if len(o.patterns) == 0 {
		o.patterns = []string{"*.bin"}
	}
	e.newRepo(work, o.patterns...)
	if o.lfsURL != "" {
		writeFile(e.t, filepath.Join(work, ".lfsconfig"), []byte(fmt.Sprintf("[lfs]\n\turl = %s\n\tlocksverify = false\n", o.lfsURL)))
	}
	if o.fileURL {
		remote = "file://" + remote
	}
	e.git(work, "remote", "add", "origin", remote)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sameTree asserts every regular file under want (outside .git) has identical bytes under got.
func sameTree(t *testing.T, want, got string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(want, p)
		a, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil {
			t.Errorf("%s missing in the clone: %v", rel, err)
			return nil
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs in the clone (%d bytes, want %d; starts %q)", rel, len(b), len(a), first(b, 60))
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func first(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// dirSize is the bytes of all regular files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkLFSObjects asserts every object in a repository's .git/lfs/objects hashes to its name
// (nothing corrupt was handed to git-lfs) and returns how many there are.
func checkLFSObjects(t *testing.T, repo string) int {
	t.Helper()
	return checkObjectsIn(t, filepath.Join(repo, ".git", "lfs", "objects"))
}

// checkObjectsIn is checkLFSObjects of an objects directory wherever it is (lfs.storage).
func checkObjectsIn(t *testing.T, root string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != d.Name() {
			t.Errorf("corrupt LFS object %s: SHA-256 %s", p, got)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// logLines returns the agents' log lines containing all of the given substrings.
func (e *env) logLines(subs ...string) []string {
	b, _ := os.ReadFile(e.log)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		ok := l != ""
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// needStrace skips a test that needs strace where it is missing, but fails it under CI=true (.ci/run
// installs it).
func needStrace(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace is missing (required under CI=true: .ci/run installs it)")
		}
		t.Skip("strace is missing")
	}
}

func needLinux(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses /proc")
	}
}

// pushWithoutLFS pushes main's commits to origin but none of their LFS objects
// (GIT_LFS_SKIP_PUSH), as a remote whose LFS data comes from elsewhere would get them.
func (e *env) pushWithoutLFS(work string) {
	e.t.Helper()
	push := e.cmd(work, "git", "push", "-q", "origin", "main")
	push.Env = append(push.Env, "GIT_LFS_SKIP_PUSH=1")
	if out, err := push.CombinedOutput(); err != nil {
		e.t.Fatalf("push without LFS objects: %v\n%s", err, out)
	}
}

// killProcess kills the process pid at once (SIGKILL on unix, TerminateProcess on Windows).
func killProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
