//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A push whose credential helper still holds a token that was rotated goes through in one go: the
// Hub refuses the stale token, the agent rejects it (git credential reject), asks git credential
// again for the same request, as git-lfs does, and the helper's next answer (here its new entry;
// for a person, git's prompt) is taken and approved. The push failed before, and only the next
// one found the new token.
func TestPushWithARotatedTokenInTheHelper(t *testing.T) {
	e, work := helperRepo(t, func(home string) string {
		rotated := filepath.Join(home, "rotated")
		return "cat > /dev/null\necho \"$1\" >> " + filepath.Join(home, "helper.log") + "\n" +
			"case \"$1\" in\nget) if [ -e " + rotated + " ]; then t=" + hubWriteToken + "; else t=hf_staleSTALEstale0123456789; fi; " +
			"printf 'username=hf_user\\npassword=%s\\n' $t;;\nerase) touch " + rotated + ";;\nesac\nexit 0\n"
	})
	logf := filepath.Join(e.home, "helper.log")
	if out, err := e.gitErr(work, "push", "-q", "origin", "main"); err != nil {
		t.Fatalf("the push with a rotated token in the helper failed:\n%s", out)
	}
	b, _ := os.ReadFile(logf)
	actions := strings.Fields(string(b))
	if strings.Join(actions[:min(len(actions), 3)], " ") != "get erase get" || !strings.Contains(string(b), "store") {
		t.Errorf("the helper was asked %q, want get, erase, get, then store", actions)
	}
}
