package xetlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
)

// gitRepo is a repository in a temp dir, configured for tests.
type gitRepo struct {
	t       *testing.T
	dir     string
	commits int // commits made: each is dated a minute after the one before
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is missing (required under CI=true)")
		}
		t.Skip("git is missing")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	r.git("config", "user.name", "T")
	r.git("config", "user.email", "t@example.test")
	return r
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *gitRepo) write(path, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *gitRepo) commit(msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	r.commits++
	date := fmt.Sprintf("2026-01-01T00:%02d:00Z", r.commits)
	r.t.Setenv("GIT_AUTHOR_DATE", date)
	r.t.Setenv("GIT_COMMITTER_DATE", date)
	r.git("commit", "-q", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

// oidN is a made-up oid (random-looking, as real ones are: git's rename detection compares the
// pointers' text); pointerOf its pointer text.
func oidN(n int) string {
	s := sha256.Sum256([]byte(fmt.Sprint(n)))
	return hex.EncodeToString(s[:])
}

func pointerOf(n int, size int64) string {
	return fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", oidN(n), size)
}

// A history of LFS pointers, plain files, a rename, a merge, a deletion: each commit's LFS paths
// with their previous versions in the first parent (deleted ones marked), in git log's order; path
// limits and revision ranges as git log takes them.
func TestChanges(t *testing.T) {
	r := newGitRepo(t)
	r.write("a.bin", pointerOf(1, 100))
	r.write("notes.txt", "plain text")
	c1 := r.commit("one")
	r.write("a.bin", pointerOf(2, 110))
	r.write("sub dir/b.bin", pointerOf(3, 300))
	r.write("notes.txt", "more text")
	c2 := r.commit("two")
	r.git("mv", "a.bin", "renamed.bin") // same content: git finds the rename
	r.write("empty.bin", "")
	c3 := r.commit("three")
	r.git("checkout", "-q", "-b", "side", c2)
	r.write("sub dir/b.bin", pointerOf(4, 310))
	c4 := r.commit("side")
	r.git("checkout", "-q", "main")
	r.commits++
	r.t.Setenv("GIT_COMMITTER_DATE", fmt.Sprintf("2026-01-01T00:%02d:00Z", r.commits))
	r.git("merge", "-q", "--no-edit", "side")
	merge := r.git("rev-parse", "HEAD")
	r.git("rm", "-q", "renamed.bin")
	del := r.commit("delete")

	g := gitrepo.Git{Dir: r.dir}
	got, err := Changes(context.Background(), g, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{ // newest first; the merge against its first parent
		{Commit: del, Path: "renamed.bin", Oid: oidN(2), Size: 110, Deleted: true},
		{Commit: merge, Path: "sub dir/b.bin", Oid: oidN(4), Size: 310, PrevPath: "sub dir/b.bin", PrevOid: oidN(3), PrevSize: 300},
		{Commit: c4, Path: "sub dir/b.bin", Oid: oidN(4), Size: 310, PrevPath: "sub dir/b.bin", PrevOid: oidN(3), PrevSize: 300},
		{Commit: c3, Path: "renamed.bin", Oid: oidN(2), Size: 110, PrevPath: "a.bin", PrevOid: oidN(2), PrevSize: 110},
		{Commit: c2, Path: "a.bin", Oid: oidN(2), Size: 110, PrevPath: "a.bin", PrevOid: oidN(1), PrevSize: 100},
		{Commit: c2, Path: "sub dir/b.bin", Oid: oidN(3), Size: 300},
		{Commit: c1, Path: "a.bin", Oid: oidN(1), Size: 100},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Changes of the whole history:\n got %v\nwant %v", got, want)
	}

	got, err = Changes(context.Background(), g, []string{c1 + ".." + c3}, []string{"a.bin"})
	if err != nil {
		t.Fatal(err)
	}
	// Limited to a.bin, git sees the rename as a deletion.
	want = []Change{{Commit: c3, Path: "a.bin", Oid: oidN(2), Size: 110, Deleted: true}, want[4]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Changes of %.7s..%.7s -- a.bin:\n got %v\nwant %v", c1, c3, got, want)
	}
	if _, err := Changes(context.Background(), g, []string{"no-such-rev"}, nil); err == nil {
		t.Error("an unknown revision gave no error")
	}
	if _, err := Changes(context.Background(), g, []string{"--output=/tmp/x"}, nil); err == nil || !strings.Contains(err.Error(), "not a revision") {
		t.Errorf("an option as a revision: %v, want a refusal", err)
	}
}
