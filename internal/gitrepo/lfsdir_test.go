package gitrepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// LFSDir is where git-lfs itself keeps a repository's objects and temp files (`git lfs env`'s
// LocalMediaDir and TempDir): by default, with lfs.storage relative and absolute, and in a linked
// work tree, whose objects are the main repository's.
func TestLFSDirIsGitLFSs(t *testing.T) {
	home := gitLFSHome(t)
	main := filepath.Join(home, "main")
	run(t, home, "init", "-q", main)
	run(t, main, "-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-q", "--allow-empty", "-m", "one")
	run(t, main, "worktree", "add", "-q", filepath.Join(home, "wt"))
	elsewhere := filepath.Join(home, "elsewhere")
	for _, c := range []struct {
		name, dir, storage string
	}{
		{"default", main, ""},
		{"a linked work tree", filepath.Join(home, "wt"), ""},
		{"lfs.storage relative", main, "media"},
		{"lfs.storage absolute", main, elsewhere},
		{"a linked work tree with lfs.storage", filepath.Join(home, "wt"), "media"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.storage != "" {
				run(t, main, "config", "lfs.storage", c.storage)
				t.Cleanup(func() { run(t, main, "config", "--unset", "lfs.storage") })
			}
			env := lfsEnv(t, c.dir)
			got, err := New(Git{Dir: c.dir}).LFSDir(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := env["LocalMediaDir"]; filepath.Join(got, "objects") != want {
				t.Errorf("LFSDir %s: objects in %s, git-lfs's in %s", got, filepath.Join(got, "objects"), want)
			}
			if want := env["TempDir"]; filepath.Join(got, "tmp") != want {
				t.Errorf("LFSDir %s: temp files in %s, git-lfs's in %s", got, filepath.Join(got, "tmp"), want)
			}
		})
	}
}

// lfsEnv is `git lfs env`'s KEY=VALUE lines in dir.
func lfsEnv(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command("git", "lfs", "env")
	cmd.Dir = dir
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git lfs env: %v", err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}
