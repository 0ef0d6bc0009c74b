package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// needTools skips when git or git-lfs is missing, except under CI=true where that is a failure.
func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"git", "git-lfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (required under CI=true)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
}

// tempHome gives the test its own HOME and no system git config.
func tempHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	// Outside any repository: `git lfs install` inside one would add hooks to it.
	t.Chdir(home)
	return home
}

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func gitConfig(t *testing.T, key string) string {
	t.Helper()
	out, _ := exec.Command("git", "config", "--global", "--get", key).Output()
	return strings.TrimSpace(string(out))
}

func TestInstallUninstallGlobal(t *testing.T) {
	needTools(t)
	home := tempHome(t)
	cfgPath := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(cfgPath, []byte("[user]\n\tname = Someone\n[lfs]\n\tconcurrenttransfers = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCmd(t, "install")
	if code != 0 {
		t.Fatalf("install exit %d: %s%s", code, out, errOut)
	}
	self, err := selfPath()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		keyPath:              self,
		keyConcurrent:        "true",
		keyStandalone:        "xet",
		"filter.lfs.process": "git-lfs filter-process",
	}
	for k, v := range want {
		if got := gitConfig(t, k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	// git-lfs itself must resolve the standalone agent for a local remote's file:// URL.
	out2, err := exec.Command("git", "config", "--get-urlmatch", "lfs.standalonetransferagent", "file:///srv/repo.git").Output()
	if err != nil || strings.TrimSpace(string(out2)) != "xet" {
		t.Errorf("urlmatch for file:///srv/repo.git = %q, %v", out2, err)
	}

	first, _ := os.ReadFile(cfgPath)
	if code, out, errOut := runCmd(t, "install"); code != 0 {
		t.Fatalf("second install exit %d: %s%s", code, out, errOut)
	}
	second, _ := os.ReadFile(cfgPath)
	if !bytes.Equal(first, second) {
		t.Errorf("install is not idempotent:\n%s\n---\n%s", first, second)
	}

	code, out, errOut = runCmd(t, "status")
	if code != 0 || !strings.Contains(out, keyPath) || !strings.Contains(out, self) || !strings.Contains(out, "git-lfs/") || !strings.Contains(out, "git version") {
		t.Errorf("status exit %d:\n%s%s", code, out, errOut)
	}

	if code, out, errOut := runCmd(t, "uninstall"); code != 0 {
		t.Fatalf("uninstall exit %d: %s%s", code, out, errOut)
	}
	for _, k := range []string{keyPath, keyConcurrent, keyStandalone} {
		if got := gitConfig(t, k); got != "" {
			t.Errorf("after uninstall %s = %q", k, got)
		}
	}
	// What the user had stays.
	if gitConfig(t, "user.name") != "Someone" || gitConfig(t, "lfs.concurrenttransfers") != "4" {
		t.Errorf("uninstall removed the user's settings:\n%s", readFile(t, cfgPath))
	}
	if strings.Contains(readFile(t, cfgPath), "customtransfer") {
		t.Errorf("uninstall left a section:\n%s", readFile(t, cfgPath))
	}
	code, out, _ = runCmd(t, "status")
	if code != 1 || !strings.Contains(out, "NOT installed") {
		t.Errorf("status after uninstall: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd(t, "uninstall")
	if code != 0 || !strings.Contains(out, "nothing to remove") {
		t.Errorf("second uninstall: exit %d %s", code, out)
	}
}

func TestUninstallLeavesOthersStandaloneAgent(t *testing.T) {
	needTools(t)
	tempHome(t)
	if out, err := exec.Command("git", "config", "--global", keyStandalone, "other").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	code, out, _ := runCmd(t, "uninstall")
	if code != 0 || gitConfig(t, keyStandalone) != "other" {
		t.Errorf("exit %d, %s = %q\n%s", code, keyStandalone, gitConfig(t, keyStandalone), out)
	}
}

// Another tool's agent registered under the same name (Hugging Face's git-xet installs itself as
// lfs.customtransfer.xet) keeps its settings: uninstall removed its path and concurrent keys
// whatever their value, leaving git-lfs a transfer named xet with no program.
func TestUninstallLeavesOthersAgentPath(t *testing.T) {
	needTools(t)
	tempHome(t)
	for k, v := range map[string]string{keyPath: "/usr/local/bin/git-xet", keyConcurrent: "true", "lfs.customtransfer.xet.args": "transfer"} {
		if out, err := exec.Command("git", "config", "--global", k, v).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	code, out, _ := runCmd(t, "uninstall")
	if code != 0 || gitConfig(t, keyPath) != "/usr/local/bin/git-xet" || gitConfig(t, keyConcurrent) != "true" {
		t.Errorf("exit %d, %s = %q, %s = %q\n%s", code, keyPath, gitConfig(t, keyPath), keyConcurrent, gitConfig(t, keyConcurrent), out)
	}
	if !strings.Contains(out, "not written by install") {
		t.Errorf("uninstall did not say why it left %s:\n%s", keyPath, out)
	}
	// Ours, in any of the forms install writes (either binary; a Windows path), is removed.
	for _, p := range []string{"/opt/x/git-xet-transfer", "/opt/x/git-xet-transfer-agent", `C:\Tools\git-xet-transfer-agent.exe`, "C:/Tools/git-xet-transfer.exe"} {
		exec.Command("git", "config", "--global", keyPath, p).Run()
		exec.Command("git", "config", "--global", keyConcurrent, "true").Run()
		if code, out, _ := runCmd(t, "uninstall"); code != 0 || gitConfig(t, keyPath) != "" || gitConfig(t, keyConcurrent) != "" {
			t.Errorf("path %s: exit %d, %s = %q, %s = %q\n%s", p, code, keyPath, gitConfig(t, keyPath), keyConcurrent, gitConfig(t, keyConcurrent), out)
		}
	}
}

func TestInstallLocalOutsideRepoSaysWhy(t *testing.T) {
	needTools(t)
	home := tempHome(t)
	t.Chdir(home)
	code, _, errOut := runCmd(t, "install", "--local")
	if code == 0 || !strings.Contains(errOut, "inside a git repository") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestScopeFlags(t *testing.T) {
	needTools(t)
	tempHome(t)
	code, _, errOut := runCmd(t, "install", "--local", "--system")
	if code != 2 || !strings.Contains(errOut, "only one of") {
		t.Errorf("exit %d, %q", code, errOut)
	}
	code, _, errOut = runCmd(t, "install", "extra")
	if code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("exit %d, %q", code, errOut)
	}
}

func TestVersionAndUnknownCommand(t *testing.T) {
	for _, v := range []string{"version", "--version"} {
		code, out, _ := runCmd(t, v)
		if code != 0 || !strings.HasPrefix(out, "git-xet-transfer ") {
			t.Errorf("%s: %d %q", v, code, out)
		}
	}
	code, _, errOut := runCmd(t, "frobnicate")
	if code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) || !strings.Contains(errOut, "install") {
		t.Errorf("unknown: %d %q", code, errOut)
	}
}

// Every command but the agent and track (which hand their arguments to git-lfs) refuses a flag
// it does not know, exit 2, naming it or its usage, and does nothing else: a mistyped flag in a
// script is not silently dropped. Before, version printed the version for `version --bogus`.
func TestEveryCommandRefusesAnUnknownFlag(t *testing.T) {
	tempHome(t)
	t.Chdir(t.TempDir()) // no repository: a command that went on would fail differently
	for _, c := range commands() {
		if c.name == "transfer" || c.name == "track" {
			continue
		}
		code, out, errOut := runCmd(t, c.name, "--no-such-flag")
		if code != 2 || out != "" || !(strings.Contains(errOut, "no-such-flag") || strings.Contains(errOut, "usage")) {
			t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr %q; want exit 2, the flag or the usage named, nothing on stdout", c.name, code, out, errOut)
		}
	}
}

func TestTrackPassesThrough(t *testing.T) {
	needTools(t)
	tempHome(t)
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Chdir(dir)
	code, out, errOut := runCmd(t, "track", "*.bin")
	if code != 0 {
		t.Fatalf("track: %d %s %s", code, out, errOut)
	}
	if got := readFile(t, filepath.Join(dir, ".gitattributes")); !strings.Contains(got, "*.bin filter=lfs diff=lfs merge=lfs -text") {
		t.Errorf(".gitattributes = %q", got)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIsHubURL(t *testing.T) {
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:9999")
	for u, want := range map[string]bool{
		"https://huggingface.co/org/m": true,
		"https://hf.co/datasets/org/d": true,
		"git@hf.co:org/m":              true,
		"ssh://git@hf.co/org/m":        true,
		"http://127.0.0.1:9999/org/m":  true,
		"https://github.com/org/m":     false,
		"git@github.com:org/m":         false,
		"/srv/repos/m.git":             false,
	} {
		if got := isHubURL(u); got != want {
			t.Errorf("isHubURL(%q) = %v", u, got)
		}
	}
}

func TestMigrateFlags(t *testing.T) {
	var errb strings.Builder
	f, ok := parseMigrateFlags([]string{"--refs", "main,dev", "--refs", "v1", "--to", "https://x/y.git/info/lfs", "--verify", "all"}, &errb)
	if !ok || strings.Join(f.refs, " ") != "main dev v1" || f.to != "https://x/y.git/info/lfs" || f.verify != "all" || f.sessionMB != 1024 {
		t.Errorf("%+v %v %s", f, ok, errb.String())
	}
	if _, ok := parseMigrateFlags([]string{"--verify", "some"}, &errb); ok {
		t.Errorf("--verify some accepted")
	}
}

// A bad flag value is refused with an error that names it. Before, a negative --jobs or
// --session-size was taken as given, an empty --refs walked every ref (and migrated them), and a wrong
// --verify or a stray argument printed only the usage.
func TestMigrateFlagsNameWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--jobs", "-1"}, "--jobs"},
		{[]string{"--session-size", "0"}, "--session-size"},
		{[]string{"--session-size", "-5"}, "--session-size"},
		{[]string{"--refs", ""}, "-refs"},
		{[]string{"--refs", " , "}, "-refs"},
		{[]string{"--verify", "nope"}, `"nope"`},
		{[]string{"extra"}, `"extra"`},
	} {
		var errb strings.Builder
		if _, ok := parseMigrateFlags(c.args, &errb); ok {
			t.Errorf("%q accepted", c.args)
			continue
		}
		if first := strings.SplitN(errb.String(), "\n", 2)[0]; !strings.Contains(first, c.want) {
			t.Errorf("%q: the first line of the error does not name %s: %q", c.args, c.want, first)
		}
	}
}

// install writes the start-up agent when it sits beside this program, else this program.
func TestAgentPathPrefersStartupAgent(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "git-xet-transfer")
	if got := agentPath(self); got != self {
		t.Fatalf("alone: %q, want %q", got, self)
	}
	name := "git-xet-transfer-agent"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := agentPath(self), filepath.Join(dir, name); got != want {
		t.Fatalf("beside it: %q, want %q", got, want)
	}
}

// install (global, the default) run inside a repository changes the user's git config only: not
// that repository's hooks. git-lfs installs its hooks in a repository when it first runs there, and
// `git lfs install` (global) inside one would also write them, and fail on a pre-push hook of the
// user's own, so that install wrote none of its keys. Before the fix: exit 1, "`git lfs install`
// failed: git lfs install: Hook already exists: pre-push".
func TestInstallGlobalInsideARepositoryLeavesItsHooks(t *testing.T) {
	needTools(t)
	tempHome(t)
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	hooks := filepath.Join(repo, ".git", "hooks")
	mine := "#!/bin/sh\necho the user's own hook\n"
	if err := os.WriteFile(filepath.Join(hooks, "pre-push"), []byte(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(hooks)
	t.Chdir(repo)
	code, out, errOut := runCmd(t, "install")
	if code != 0 {
		t.Fatalf("install in a repository with a hook of its own: exit %d\n%s%s", code, out, errOut)
	}
	if got := gitConfig(t, keyPath); got == "" {
		t.Errorf("%s not written", keyPath)
	}
	if got := readFile(t, filepath.Join(hooks, "pre-push")); got != mine {
		t.Errorf("the repository's pre-push hook was changed:\n%s", got)
	}
	if after, _ := os.ReadDir(hooks); len(after) != len(before) {
		t.Errorf("install added hooks to the repository it ran in: %d files, were %d", len(after), len(before))
	}
}

// status shows what a cloned repository's .lfsconfig sets (its LFS URL, and remotes it names with
// remote.<name>.lfsurl) with no terminal escape: anyone can commit a .lfsconfig. Before the fix the
// output held "file:///tmp/a\x1b]0;pwned\x07b" and a remote "o\x1b[2Jx".
func TestStatusHidesTerminalEscapesOfTheRepository(t *testing.T) {
	needTools(t)
	tempHome(t)
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "remote", "add", "origin", "https://example.com/x.git"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	lfsconfig := "[lfs]\n\turl = \"/tmp/a\x1b]0;pwned\x07b\"\n[remote \"o\x1b[2Jx\"]\n\tlfsurl = \"https://h/x\x1b[2Jy\"\n"
	if err := os.WriteFile(filepath.Join(repo, ".lfsconfig"), []byte(lfsconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(repo)
	_, out, errOut := runCmd(t, "status")
	if !strings.Contains(out, "pwned") {
		t.Fatalf("the .lfsconfig's URL is not shown, so this test shows nothing:\n%s", out)
	}
	if strings.ContainsAny(out+errOut, "\x1b\x07") {
		t.Errorf("a terminal escape reached the output:\n%q", out+errOut)
	}
}

// A repository's own agent path (migrate writes the agent's keys with --local) wins over the global
// one: when it names a program that is gone, status says to install in that repository, since a
// global install again changes nothing there. Before the fix it said "run `git-xet-transfer
// install` again", which left the repository as it was, status saying the same after it.
func TestStatusNamesTheScopeOfAStaleAgentPath(t *testing.T) {
	needTools(t)
	tempHome(t)
	if code, out, errOut := runCmd(t, "install"); code != 0 {
		t.Fatalf("install: %d %s%s", code, out, errOut)
	}
	repo := t.TempDir()
	gone := filepath.Join(t.TempDir(), "old", "git-xet-transfer-agent")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "config", "--local", keyPath, gone}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	t.Chdir(repo)
	code, out, _ := runCmd(t, "status")
	if code != 1 || !strings.Contains(out, gone) {
		t.Fatalf("status with a stale local path: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "git-xet-transfer install --local") {
		t.Errorf("status does not say to install in this repository (--local):\n%s", out)
	}
	if code, out, errOut := runCmd(t, "install", "--local"); code != 0 {
		t.Fatalf("install --local: %d %s%s", code, out, errOut)
	}
	if code, out, _ := runCmd(t, "status"); code != 0 {
		t.Errorf("status after install --local: exit %d\n%s", code, out)
	}
}

// fsck's bad arguments are named: a stray argument exited 2 with nothing said, and --repair without
// --verify-data, which alone finds what to repair, was ignored.
func TestFsckArgumentsNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fsck", "/srv/repo.git/xet"}, `"/srv/repo.git/xet"`},
		{[]string{"fsck", "--repair"}, "--verify-data"},
	} {
		code, _, errOut := runCmd(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 naming %s", c.args, code, errOut, c.want)
		}
	}
}
