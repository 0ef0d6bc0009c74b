package server

import (
	"bytes"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// lookTool finds an outside tool; missing, the test skips, except under CI=true where it fails.
func lookTool(t *testing.T, name, fallback string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if _, err := os.Stat(fallback); err == nil {
		return fallback
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found (CI=true: required)", name)
	}
	t.Skipf("%s not found", name)
	return ""
}

// The real git-lfs client pushes and clones with the basic transfer against the server: the
// uploads are chunked into xorbs and shards by the server, the downloads reconstructed by the
// bridge, and the cloned files are byte for byte the pushed ones.
func TestGitLFSBasicPushClone(t *testing.T) {
	git := lookTool(t, "git", "/usr/bin/git")
	gitLFS := lookTool(t, "git-lfs", "/usr/local/bin/git-lfs")
	e := newEnv(t, nil)

	root := t.TempDir()
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	envv := []string{
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"PATH=" + filepath.Dir(gitLFS) + string(os.PathListSeparator) + filepath.Dir(git) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	}
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = envv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s\nserver log:\n%s", strings.Join(args, " "), err, out, e.logs.String())
		}
		return string(out)
	}
	lfsURL := e.base + "/team/repo.git/info/lfs"
	run(root, "config", "--global", "init.defaultBranch", "main")
	run(root, "config", "--global", "lfs.url", lfsURL)
	run(root, "config", "--global", "lfs.locksverify", "false")
	run(root, "lfs", "install")

	remote := filepath.Join(root, "remote.git")
	run(root, "init", "--bare", remote)
	work := filepath.Join(root, "work")
	run(root, "init", work)
	run(work, "lfs", "track", "*.bin")
	files := map[string][]byte{
		"small.bin":      vectors.SplitMix(50_000, 1),
		"big.bin":        vectors.SplitMix(3_000_000, 2),
		"dir/copy.bin":   vectors.SplitMix(50_000, 1), // same content as small.bin
		"text/plain.txt": []byte("not an LFS file\n"),
	}
	for name, data := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(work, "add", "-A")
	run(work, "commit", "-q", "-m", "files")
	if out := run(work, "lfs", "ls-files"); strings.Count(out, "\n") != 3 {
		t.Fatalf("git lfs ls-files:\n%s", out)
	}
	run(work, "remote", "add", "origin", remote)
	run(work, "push", "-q", "origin", "main")

	// The server has the objects, under the repository's namespace.
	for _, name := range []string{"small.bin", "big.bin"} {
		sum := sha256.Sum256(files[name])
		if _, size, err := e.st.LookupSHA256(t.Context(), "team/repo", hash.FromSHA256(sum)); err != nil || size != uint64(len(files[name])) {
			t.Fatalf("%s not stored: %d %v", name, size, err)
		}
	}

	clone := filepath.Join(root, "clone")
	run(root, "clone", "-q", remote, clone)
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(clone, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("cloned %s differs from the pushed file (%d vs %d bytes)", name, len(got), len(data))
		}
	}
	// And the clone's LFS store holds real objects (not pointers that happened to match).
	if out := run(clone, "lfs", "fsck"); !strings.Contains(out, "fsck OK") {
		t.Fatalf("git lfs fsck:\n%s", out)
	}
	if os.Getenv("XET_SERVER_TEST_LOG") != "" {
		t.Log(e.logs.String())
	}
}
