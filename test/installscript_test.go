package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallScriptGitLFS runs install.sh as root would on a machine without git-lfs and with
// apt-get: it must install git-lfs 3.8.1 with go install, as the README says, and never take the
// distribution's package (Debian 12's apt-get gives 3.3.0). go install is recorded, not run: a fake
// go passes every other command to the real one and answers `go install` with a fake git-lfs.
func TestInstallScriptGitLFS(t *testing.T) {
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	goroot := strings.TrimSpace(mustOutput(t, realGo, "env", "GOROOT"))
	fake := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(fake, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("apt-get", `echo "apt-get $*" >>"`+calls+`"; exit 0`+"\n")
	write("go", `if [ "$1" = install ]; then
  echo "go $* GOBIN=$GOBIN" >>"`+calls+`"
  printf '#!/bin/sh\n[ "$1" = version ] && echo "git-lfs/3.8.1 (fake)"\nexit 0\n' >"$GOBIN/git-lfs"; chmod 755 "$GOBIN/git-lfs"; exit 0
fi
exec "`+realGo+`" "$@"
`)
	if err := os.Symlink(realGit, filepath.Join(fake, "git")); err != nil {
		t.Fatal(err)
	}
	// The PATH: the fakes, then the system's folders without any git-lfs.
	path := fake
	for _, d := range []string{"/usr/bin", "/bin"} {
		if _, err := os.Stat(filepath.Join(d, "git-lfs")); err == nil {
			t.Skipf("%s/git-lfs cannot be hidden from install.sh here", d)
		}
		path += ":" + d
	}
	home := t.TempDir()
	prefix := filepath.Join(home, "bin")
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "install.sh"))
	cmd.Env = []string{"PATH=" + path, "HOME=" + home, "PREFIX=" + prefix, "GOROOT=" + goroot,
		"GOCACHE=" + strings.TrimSpace(mustOutput(t, realGo, "env", "GOCACHE")),
		"GOMODCACHE=" + strings.TrimSpace(mustOutput(t, realGo, "env", "GOMODCACHE")),
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(calls)
	got := string(b)
	if strings.Contains(got, "apt-get") {
		t.Errorf("install.sh ran apt-get (the distribution's git-lfs, not 3.8.1):\n%s", got)
	}
	if !strings.Contains(got, "go install github.com/git-lfs/git-lfs/v3@v3.8.1 GOBIN="+prefix) {
		t.Errorf("install.sh did not go install git-lfs v3.8.1 into %s; calls:\n%s\noutput:\n%s", prefix, got, out)
	}
	for _, name := range []string{"git-xet-transfer", "git-xet-transfer-agent"} {
		if _, err := os.Stat(filepath.Join(prefix, name)); err != nil {
			t.Errorf("no %s in %s: %v", name, prefix, err)
		}
	}
}

func mustOutput(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out)
}

// repoRoot is the checkout this package is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return d
}
