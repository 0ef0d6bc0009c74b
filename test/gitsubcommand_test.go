package test

import (
	"path/filepath"
	"strings"
	"testing"
)

// The binary is named git-xet-transfer, so with it on the PATH git runs it as `git xet-transfer …`:
// a user can install, inspect and uninstall through git itself.
func TestGitXetTransferSubcommand(t *testing.T) {
	e := newEnv(t)
	if out := e.git("", "xet-transfer", "version"); !strings.HasPrefix(out, "git-xet-transfer ") {
		t.Fatalf("git xet-transfer version: %q", out)
	}
	e.git("", "xet-transfer", "install")
	self := filepath.Join(binDir, "git-xet-transfer")
	// The start-up agent beside it is what git-lfs runs.
	agentPath := filepath.Join(binDir, "git-xet-transfer-agent")
	if got := strings.TrimSpace(e.git("", "config", "--global", "lfs.customtransfer.xet.path")); got != agentPath {
		t.Fatalf("after git xet-transfer install, lfs.customtransfer.xet.path = %q, want %q", got, agentPath)
	}
	status := e.git("", "xet-transfer", "status")
	for _, want := range []string{"lfs.customtransfer.xet.path", self, "lfs.file:///.standalonetransferagent", "git-lfs/"} {
		if !strings.Contains(status, want) {
			t.Errorf("git xet-transfer status lacks %q:\n%s", want, status)
		}
	}
	e.git("", "xet-transfer", "uninstall")
	if out, err := e.gitErr("", "config", "--global", "lfs.customtransfer.xet.path"); err == nil {
		t.Fatalf("after git xet-transfer uninstall the setting is still there: %q", out)
	}
}
