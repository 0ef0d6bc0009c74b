package migrate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func ptr(n int, ext string) string {
	return "version https://git-lfs.github.com/spec/v1\n" + ext + fmt.Sprintf("oid sha256:%064x\nsize %d\n", n, 100+n)
}

// The walk finds pointers as git-lfs does (extensions decoded; look-alikes, and anything of 1024
// bytes or more, left alone), follows the refs asked for (annotated tags peeled), and orders the
// versions of each path oldest first.
func TestWalk(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required under CI=true")
		}
		t.Skip("no git")
	}
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for v := 1; v <= 3; v++ {
		write("model.bin", ptr(v, ""))
		gitIn(t, dir, "add", ".")
		gitIn(t, dir, "commit", "-qm", fmt.Sprintf("v%d", v))
	}
	write("ext.bin", ptr(10, "ext-0-foo sha256:"+strings.Repeat("1", 64)+"\n"))
	write("fake.txt", "version https://git-lfs.github.com/spec/v1\noid sha256:zz\nsize 1\n")
	write("big.txt", ptr(11, "")+strings.Repeat("#", 1100))
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-qm", "more")
	gitIn(t, dir, "tag", "-a", "-m", "release", "v1")
	gitIn(t, dir, "checkout", "-q", "-b", "side", "HEAD~3")
	write("side/only.bin", ptr(20, ""))
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-qm", "side")
	gitIn(t, dir, "checkout", "-q", "main")

	inv, err := Walk(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range inv.Objects {
		got = append(got, fmt.Sprintf("%s:%s", o.Path, strings.TrimLeft(o.Oid, "0")))
	}
	want := "model.bin:1 model.bin:2 model.bin:3 side/only.bin:14 ext.bin:a"
	if strings.Join(got, " ") != want {
		t.Errorf("objects %v, want %s", got, want)
	}
	if inv.Commits != 5 {
		t.Errorf("%d commits, want 5", inv.Commits)
	}
	inv, err = Walk(context.Background(), dir, []string{"v1"})
	if err != nil || len(inv.Objects) != 4 {
		t.Fatalf("refs v1: %v, %d objects", err, len(inv.Objects))
	}
	if _, err := Walk(context.Background(), dir, []string{"nosuchref"}); err == nil || !strings.Contains(err.Error(), "nosuchref") {
		t.Errorf("unknown ref: %v", err)
	}
}

// A branch nested deeper than any checkout can hold is refused with what to do, before the walk's
// memory grows with the square of its depth (each level keeps its path): 488 MB for 2,000 levels
// of 200-byte names, from a pack of 144 KB that anyone could push.
func TestWalkRefusesPathsNoCheckoutHolds(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	deep := strings.Repeat("d/", 2100) + "f.bin" // 4,205 bytes
	var stream strings.Builder
	fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter t <t@t> 0 +0000\ndata 4\ndeep\nM 100644 inline %s\ndata %d\n%s\n", deep, len(ptr(1, "")), ptr(1, ""))
	c := exec.Command("git", "fast-import", "--quiet")
	c.Dir, c.Stdin = dir, strings.NewReader(stream.String())
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
	_, err := Walk(context.Background(), dir, nil)
	if err == nil || !strings.Contains(err.Error(), "longer than 4096 bytes") || !strings.Contains(err.Error(), "--refs") {
		t.Fatalf("a walk of a path of %d bytes: %v, want it refused, saying how to leave it out", len(deep), err)
	}
}
