package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s missing", tool)
			}
			t.Skipf("%s missing", tool)
		}
	}
}

func sh(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func oidOf(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestStagedFilesAreWhatGitLFSWouldCommit: files staged by each mode and committed are, to git-lfs,
// the files `git add` would have committed: `git lfs ls-files` names each with the SHA-256 of its
// bytes, `git lfs fsck` finds the objects and pointers sound, and a push to a bare remote and a
// clone from it (plain git-lfs) give back the same bytes.
func TestStagedFilesAreWhatGitLFSWouldCommit(t *testing.T) {
	need(t, "git", "git-lfs")
	base := t.TempDir()
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "home", ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.MkdirAll(filepath.Join(base, "home"), 0o755)
	sh(t, base, "git", "config", "--global", "user.name", "t")
	sh(t, base, "git", "config", "--global", "user.email", "t@example.test")
	sh(t, base, "git", "lfs", "install")
	src, data := filepath.Join(base, "src"), filepath.Join(base, "data")
	sh(t, base, "git", "init", "-q", "-b", "main", src)
	sh(t, src, "git", "lfs", "track", "*.bin")
	want := map[string][]byte{ // path in the tree: bytes
		"one.bin":           bytes.Repeat([]byte("one file "), 1000),
		"d/a.bin":           []byte("a"),
		"d/e/b.bin":         bytes.Repeat([]byte{7}, 70000),
		"d/e/same-as-b.bin": bytes.Repeat([]byte{7}, 70000),
	}
	for i := range 150 { // more than fast-import's unpack limit (100): a pack, whose deltas the test checks
		want[fmt.Sprintf("many/f%03d.bin", i)] = []byte(strings.Repeat(fmt.Sprint(i), 100))
	}
	for p, b := range want {
		dir := data
		if p == "one.bin" {
			dir = filepath.Join(base, "loose")
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(src)
	var out bytes.Buffer
	if err := run([]string{"tree", data}, &out); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"file", filepath.Join(base, "loose", "one.bin"), "one.bin"}, &out); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"random", "seed-1", "300000", "r/random.bin"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	randomObj := lines[len(lines)-1]
	rb, err := os.ReadFile(randomObj)
	if err != nil || len(rb) != 300000 || filepath.Base(randomObj) != oidOf(rb) {
		t.Fatalf("random's object %s: %d bytes, err %v, not named by its SHA-256", randomObj, len(rb), err)
	}
	want["r/random.bin"] = rb
	// no pointer is stored as a delta (stage: why)
	idx, _ := filepath.Glob(filepath.Join(src, ".git", "objects", "pack", "*.idx"))
	if len(idx) != 1 {
		t.Fatalf("the staged pointers are in %d packs, want 1", len(idx))
	}
	for _, line := range strings.Split(sh(t, src, "git", "verify-pack", "-v", idx[0]), "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[1] == "blob" {
			t.Errorf("a pointer blob is a delta in the staged pack: %s", line)
		}
	}
	sh(t, src, "git", "add", ".gitattributes")
	sh(t, src, "git", "commit", "-q", "-m", "staged")

	listed := sh(t, src, "git", "lfs", "ls-files", "--long")
	for p, b := range want {
		// "-": the work tree does not hold the file (the staged files are not checked out)
		if !strings.Contains(listed, oidOf(b)+" - "+p+"\n") {
			t.Errorf("git lfs ls-files does not list %s with the SHA-256 of its bytes:\n%s", p, listed)
		}
	}
	sh(t, src, "git", "lfs", "fsck")

	sh(t, base, "git", "init", "-q", "--bare", "-b", "main", "remote.git")
	sh(t, src, "git", "remote", "add", "origin", filepath.Join(base, "remote.git"))
	sh(t, src, "git", "push", "-q", "origin", "main")
	sh(t, base, "git", "clone", "-q", "remote.git", "clone")
	for p, b := range want {
		got, err := os.ReadFile(filepath.Join(base, "clone", p))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("the clone's %s: %d bytes (err %v), want the %d staged", p, len(got), err, len(b))
		}
	}
}

// TestRandomIsSeeded: the same seed gives the same bytes in every run, another seed others.
func TestRandomIsSeeded(t *testing.T) {
	need(t, "git")
	dir := t.TempDir()
	sh(t, dir, "git", "init", "-q", dir)
	t.Chdir(dir)
	r := repo{gitDir: filepath.Join(dir, ".git")}
	a, err := r.random("s", 5000, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.random("s", 5000, "b")
	c, _ := r.random("t", 5000, "c")
	if a.oid != b.oid || a.oid == c.oid {
		t.Fatalf("seed s twice: %s, %s; seed t: %s", a.oid, b.oid, c.oid)
	}
}
