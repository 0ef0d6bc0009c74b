package gitrepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// For uploads too the resolver answers what git-lfs answers: the endpoint `git lfs push` verifies
// locks at (its first request, traced; every URL is a closed port on loopback, so nothing leaves
// the machine) for each configuration of push URLs.
func TestUploadEndpointMatchesGitLFS(t *testing.T) {
	home := gitLFSHome(t)
	run(t, home, "lfs", "install", "--skip-repo")
	const h = "http://127.0.0.1:9/"
	cases := []struct {
		name      string
		remote    string
		lfsconfig string
		config    [][]string
	}{
		{name: "lfs.pushurl over lfs.url", config: [][]string{{"lfs.url", h + "url"}, {"lfs.pushurl", h + "push"}}},
		{name: "lfs.pushurl from .lfsconfig", lfsconfig: "[lfs]\n\tpushurl = " + h + "filepush\n", config: [][]string{{"remote.origin.lfsurl", h + "lfsurl"}}},
		{name: "lfs.url over remote lfspushurl", config: [][]string{{"lfs.url", h + "url"}, {"remote.origin.lfspushurl", h + "rpush"}}},
		{name: "remote lfspushurl over lfsurl", config: [][]string{{"remote.origin.lfsurl", h + "lfsurl"}, {"remote.origin.lfspushurl", h + "rpush"}}},
		{name: "git pushurl", config: [][]string{{"remote.origin.pushurl", h + "gitpush.git"}}},
		{name: "pushInsteadOf", config: [][]string{{"remote.origin.url", "hf:org/r"}, {"url." + h + "fetch/.insteadOf", "hf:"},
			{"url." + h + "push/.pushInsteadOf", "hf:"}}},
		{name: "other remote", remote: "up", config: [][]string{{"remote.up.url", h + "up/r"}, {"remote.up.pushurl", h + "up/push"}}},
	}
	traced := regexp.MustCompile(`HTTP: POST (\S+)/locks/verify`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			run(t, work, "init", "-q")
			run(t, work, "lfs", "track", "*.bin")
			if err := os.WriteFile(filepath.Join(work, "a.bin"), []byte("a"), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.lfsconfig != "" {
				if err := os.WriteFile(filepath.Join(work, ".lfsconfig"), []byte(c.lfsconfig), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run(t, work, "add", ".")
			run(t, work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
			run(t, work, "remote", "add", "origin", h+"origin/r.git")
			for _, kv := range c.config {
				run(t, work, "config", "--add", kv[0], kv[1])
			}
			remote := c.remote
			if remote == "" {
				remote = "origin"
			}
			cmd := exec.Command("git", "lfs", "push", "--all", remote)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "GIT_TRACE=1")
			out, _ := cmd.CombinedOutput() // fails: nothing listens
			m := traced.FindSubmatch(out)
			if m == nil {
				t.Fatalf("git lfs push traced no request:\n%s", out)
			}
			ep, err := New(Git{Dir: work}).Endpoint(context.Background(), "upload", remote)
			if err != nil || ep.Url != string(m[1]) {
				t.Errorf("endpoint %q (from %s %q), %v; git-lfs pushes to %q", ep.Url, ep.Source, ep.Raw, err, m[1])
			}
		})
	}
}
