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
	code, out, _ := runCmd(t, "version")
	if code != 0 || !strings.HasPrefix(out, "git-xet-transfer ") {
		t.Errorf("version: %d %q", code, out)
	}
	code, _, errOut := runCmd(t, "frobnicate")
	if code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) || !strings.Contains(errOut, "install") {
		t.Errorf("unknown: %d %q", code, errOut)
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
