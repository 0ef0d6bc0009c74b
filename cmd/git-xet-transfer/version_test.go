package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestVersionPrintsCommit builds both binaries from a clone of this checkout's HEAD, as a user
// building from git does, and checks that `git-xet-transfer version` and `xet-server --version`
// name the clone's commit and its date, and that the tree was clean.
func TestVersionPrintsCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is missing")
		}
		t.Skip("git is missing")
	}
	top := strings.TrimSpace(runIn(t, ".", "git", "rev-parse", "--show-toplevel"))
	clone := filepath.Join(t.TempDir(), "src")
	runIn(t, ".", "git", "clone", "-q", "--no-hardlinks", top, clone)
	rev := strings.TrimSpace(runIn(t, clone, "git", "rev-parse", "HEAD"))
	date := strings.TrimSpace(runIn(t, clone, "git", "show", "-s", "--format=%cd", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", "HEAD"))
	bin := t.TempDir()
	exe := func(name string) string {
		if runtime.GOOS == "windows" {
			return filepath.Join(bin, name+".exe")
		}
		return filepath.Join(bin, name)
	}
	// -buildvcs=true: a machine's GOFLAGS may turn the recording off; a user's build has it on.
	runIn(t, clone, "go", "build", "-buildvcs=true", "-o", bin, "./cmd/git-xet-transfer", "./cmd/xet-server")
	for _, c := range [][]string{{exe("git-xet-transfer"), "version"}, {exe("xet-server"), "--version"}} {
		out := runIn(t, clone, c[0], c[1:]...)
		if !strings.Contains(out, "commit "+rev) || !strings.Contains(out, date) || strings.Contains(out, "modified") {
			t.Errorf("%s %s printed %q; want commit %s of %s, unmodified", filepath.Base(c[0]), c[1], out, rev, date)
		}
	}
}

func runIn(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TZ=UTC")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
