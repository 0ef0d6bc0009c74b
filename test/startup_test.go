package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// git-lfs starts lfs.concurrenttransfers agent processes (8 by default) for every transfer command,
// and most of them get no request: such a process runs no git at all (its settings from git config
// are read at the first request), which keeps its start-up near git's own (test/startup.sh). A
// process that gets a request reads them. Counted through a `git` on the PATH that records its
// calls, in a work tree whose .lfsconfig names an LFS server, as test/startup.sh runs it.
func TestStartupRunsNoGit(t *testing.T) {
	e := newEnv(t)
	repo := filepath.Join(e.home, "repo")
	e.git("", "init", "-q", repo)
	e.git(repo, "remote", "add", "origin", "http://127.0.0.1:9/team/repo.git")
	e.git(repo, "config", "xet.loglevel", "debug") // unread without a request: its lines are dropped
	if err := os.WriteFile(filepath.Join(repo, ".lfsconfig"), []byte("[lfs]\n\turl = http://127.0.0.1:9/team/repo.git/info/lfs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	shim, calls := t.TempDir(), filepath.Join(e.home, "git-calls")
	script := "#!/bin/sh\necho \"$*\" >> '" + calls + "'\nexec '" + realGit + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	const initUpload = `{"event":"init","operation":"upload","remote":"origin","concurrent":true,"concurrenttransfers":8}`
	malformed := `{"event":"upload","oid":"` + strings.Repeat("a", 64) + `","size":-1}`
	for _, c := range []startupCase{
		{"init, terminate", nil, []string{initUpload}, false, ""},
		{"GIT_XET_LOG_LEVEL=debug: the held start-up lines on stderr", []string{"GIT_XET_LOG_LEVEL=debug"}, []string{initUpload}, false, "DBG init"},
		// xet.loglevel=debug is read at the request: the start-up lines held until then are written.
		{"a request", nil, []string{initUpload, malformed}, true, "DBG init"},
	} {
		// The start-up agent git-lfs runs, and the full agent it hands requests to (which git-lfs
		// runs when only it is installed).
		for _, bin := range []string{"git-xet-transfer-agent", "git-xet-transfer"} {
			c.run(t, e, repo, shim, calls, bin)
		}
	}
}

// startupCase is one conversation of TestStartupRunsNoGit.
type startupCase struct {
	name     string
	env      []string
	lines    []string
	git      bool   // the process ran git
	inStderr string // "" = nothing on stderr
}

// run runs bin in repo on the case's lines and terminate, with shim's recording git (its calls in
// the file calls) first on the PATH, and checks the answers, the git calls and stderr.
func (c startupCase) run(t *testing.T, e *env, repo, shim, calls, bin string) {
	t.Helper()
	c.name = bin + ": " + c.name
	os.Remove(calls)
	cmd := e.cmd(repo, filepath.Join(binDir, bin))
	cmd.Env = append(startupEnv(e.vars, shim), c.env...)
	cmd.Stdin = strings.NewReader(strings.Join(append(c.lines, `{"event":"terminate"}`), "\n") + "\n")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", c.name, err, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "{}\n") {
		t.Errorf("%s: stdout %q, want the init reply first", c.name, stdout.String())
	}
	got, _ := os.ReadFile(calls)
	if ran := len(got) > 0; ran != c.git {
		t.Errorf("%s: git calls %q; want some: %v", c.name, got, c.git)
	}
	if (c.inStderr == "") != (stderr.Len() == 0) || !strings.Contains(stderr.String(), c.inStderr) {
		t.Errorf("%s: stderr %q, want %q in it", c.name, stderr.String(), c.inStderr)
	}
}

// startupEnv is the test's environment with the recording git first on the PATH and no log
// settings (the agent would need git config for them).
func startupEnv(vars []string, shim string) []string {
	var out []string
	for _, kv := range vars {
		switch k, v, _ := strings.Cut(kv, "="); k {
		case "GIT_XET_LOG", "GIT_XET_LOG_LEVEL":
		case "PATH":
			out = append(out, "PATH="+shim+string(os.PathListSeparator)+v)
		default:
			out = append(out, kv)
		}
	}
	return out
}
