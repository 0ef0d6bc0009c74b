package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// TestAgentPathWithSpaces installs the agent from a folder whose name has spaces (as
// C:\Program Files\… on Windows, ~/My Tools on macOS): git-lfs runs lfs.customtransfer.xet.path
// through a shell, so the path install writes must reach the agent whole. A push and a clone move
// the file through it.
func TestAgentPathWithSpaces(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.home, "Program Files", "git xet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "git-xet-transfer")
	for _, name := range []string{"git-xet-transfer", "git-xet-transfer-agent"} {
		b, err := os.ReadFile(filepath.Join(binDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := e.cmd("", exe, "install").CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	// git-lfs runs the start-up agent, which hands each request to git-xet-transfer beside it.
	if got, want := strings.TrimSpace(e.git("", "config", "--global", "lfs.customtransfer.xet.path")), filepath.Join(dir, "git-xet-transfer-agent"); got != want {
		t.Fatalf("lfs.customtransfer.xet.path = %q, want %q", got, want)
	}
	work, remote := e.localRepo(repoOpts{})
	data := testutil.RandomBytes(200<<10, 37)
	writeFile(t, filepath.Join(work, "a.bin"), data)
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "a")
	e.git(work, "push", "-q", "origin", "HEAD:main")
	if len(e.logLines(`"op":"upload"`, `"mode":"embedded"`, "transfer complete")) == 0 {
		t.Fatalf("no upload logged by the agent at %q", exe)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", "-b", "main", remote, clone)
	if got, err := os.ReadFile(filepath.Join(clone, "a.bin")); err != nil || string(got) != string(data) {
		t.Fatalf("the clone's a.bin: %d bytes, %v", len(got), err)
	}
}
