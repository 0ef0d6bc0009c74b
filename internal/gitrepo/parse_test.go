package gitrepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	out := "core.bare\nfalse\x00lfs.url\nhttps://a.test/r\x00alias.x\nline one\nline two\x00xet.flag\x00remote.Up.url\n\x00lfs.url\n/srv/b\x00"
	got := ParseList(out)
	want := []Entry{
		{Key: "core.bare", Value: "false"},
		{Key: "lfs.url", Value: "https://a.test/r"},
		{Key: "alias.x", Value: "line one\nline two"},
		{Key: "xet.flag", NoValue: true},
		{Key: "remote.Up.url", Value: ""},
		{Key: "lfs.url", Value: "/srv/b"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// fakeRepo is a Repo over fixed entries, as if loaded.
func fakeRepo(git, lfs []Entry) *Repo {
	gc := &gitConfig{entries: git, vals: map[string][]string{}}
	for _, e := range git {
		if !e.NoValue {
			gc.vals[e.Key] = append(gc.vals[e.Key], e.Value)
		}
	}
	s := &snapshot{git: gc, lfsCfg: lfs}
	s.merge()
	r := &Repo{}
	r.gitc.Set(gc)
	r.snap.Set(s)
	return r
}

func TestSnapshotLookups(t *testing.T) {
	r := fakeRepo(ParseList("lfs.url\nfromgit\x00remote.Up.lfsurl\nu1\x00xet.flag\x00xet.off\nno\x00"),
		ParseList("lfs.url\nfromfile\x00lfs.pushurl\npush\x00core.sshcommand\nevil\x00remote.x.url\nevil\x00lfs.https://h.test/.access\nnone\x00"))
	ctx := context.Background()
	check := func(key, want string, wantOK bool) {
		t.Helper()
		if v, ok, err := r.Get(ctx, key); v != want || ok != wantOK || err != nil {
			t.Errorf("Get(%q) = %q, %v, %v; want %q, %v", key, v, ok, err, want, wantOK)
		}
	}
	check("lfs.url", "fromgit", true)     // git config wins over .lfsconfig
	check("LFS.URL", "fromgit", true)     // section and name fold
	check("remote.Up.LfsUrl", "u1", true) // the subsection keeps its case
	check("remote.up.lfsurl", "", false)
	check("lfs.pushurl", "push", true)  // a safe key from .lfsconfig
	check("core.sshcommand", "", false) // an unsafe one is ignored
	check("remote.x.url", "", false)    // .lfsconfig may name only remote.<r>.lfsurl
	check("xet.flag", "", true)         // set without a value
	if all, err := r.GetAll(ctx, "lfs.url"); strings.Join(all, ",") != "fromfile,fromgit" || err != nil {
		t.Errorf("GetAll(lfs.url) = %q, %v", all, err)
	}
	boolOf := func(key string, def bool) bool { v, _ := r.Bool(ctx, key, def); return v }
	if !boolOf("xet.flag", false) || boolOf("xet.off", true) || !boolOf("xet.unset", true) {
		t.Error("Bool: a key without a value is true, \"no\" false, unset the default")
	}
	if v, ok, err := r.URLGet(ctx, "lfs", "https://h.test/org/r.git/info/lfs", "access"); v != "none" || !ok || err != nil {
		t.Errorf("URLGet(lfs.<url>.access) = %q, %v, %v", v, ok, err)
	}
}

// A real repository: one git config listing with include.path followed, .lfsconfig from the work
// tree, else the index, else HEAD.
func TestLoadRealRepository(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	inc := filepath.Join(t.TempDir(), "inc")
	if err := os.WriteFile(inc, []byte("[xet]\n\tfromInclude = yes\n[alias]\n\tml = \"!echo a\\nb\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("config", "include.path", inc)
	if err := os.WriteFile(filepath.Join(dir, ".lfsconfig"), []byte("[lfs]\n\turl = https://file.test/r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := New(Git{Dir: dir})
	if v, _, err := r.Get(ctx, "xet.frominclude"); err != nil || v != "yes" {
		t.Errorf("included key: %q, %v", v, err)
	}
	if v, _, _ := r.Get(ctx, "alias.ml"); v != "!echo a\nb" {
		t.Errorf("value with a newline: %q", v)
	}
	if v, _, _ := r.Get(ctx, "lfs.url"); v != "https://file.test/r" {
		t.Errorf("lfs.url from the work tree's .lfsconfig: %q", v)
	}
	loc, err := r.Location(ctx)
	if err != nil || loc.Bare || loc.TopLevel == "" || loc.GitDir != filepath.Join(loc.TopLevel, ".git") || loc.CommonDir != loc.GitDir {
		t.Errorf("location %+v, %v", loc, err)
	}

	git("add", ".lfsconfig")
	git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
	if err := os.WriteFile(filepath.Join(dir, ".lfsconfig"), []byte("[lfs]\n\turl = https://index.test/r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".lfsconfig")
	os.Remove(filepath.Join(dir, ".lfsconfig"))
	if v, _, _ := New(Git{Dir: dir}).Get(ctx, "lfs.url"); v != "https://index.test/r" {
		t.Errorf("lfs.url from the index: %q", v)
	}
	git("rm", "-q", "--cached", ".lfsconfig")
	if v, _, _ := New(Git{Dir: dir}).Get(ctx, "lfs.url"); v != "https://file.test/r" {
		t.Errorf("lfs.url from HEAD: %q", v)
	}
}

// gitLFSHome needs git and git-lfs and gives the test a HOME of its own with no system config and
// none of git's repository variables, as a differential test against git-lfs wants.
func gitLFSHome(t *testing.T) string {
	t.Helper()
	needGit(t)
	if _, err := exec.LookPath("git-lfs"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git-lfs missing")
		}
		t.Skip("git-lfs missing")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	return home
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git missing")
		}
		t.Skip("git missing")
	}
}

// A key .lfsconfig cannot set is read without .lfsconfig: a broken .lfsconfig fails only what
// depends on it.
func TestOtherKeysWithoutLFSConfig(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", dir, "config", "xet.loglevel", "debug").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, ".lfsconfig"), []byte("[lfs\n\turl = broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := New(Git{Dir: dir})
	if v, ok, err := r.Get(context.Background(), "xet.loglevel"); v != "debug" || !ok || err != nil {
		t.Errorf("xet.loglevel = %q, %v, %v", v, ok, err)
	}
	if _, _, err := r.Get(context.Background(), "lfs.url"); err == nil || !strings.Contains(err.Error(), ".lfsconfig") {
		t.Errorf("a key .lfsconfig may set, with a broken .lfsconfig: %v", err)
	}
}

// A load cut short by its caller's context is not the repository's answer: the next caller, whose
// context is alive, reads the configuration; and a lookup whose git cannot run says so instead of
// answering "not set".
func TestCancelledLoadNotKept(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", dir, "config", "lfs.url", "https://kept.test/r").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v\n%s", err, out)
	}
	r := New(Git{Dir: dir})
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := r.Get(gone, "lfs.url"); err == nil {
		t.Error("a lookup whose git could not run reported no error")
	}
	if v, ok, err := r.Get(context.Background(), "lfs.url"); v != "https://kept.test/r" || !ok || err != nil {
		t.Fatalf("after a cancelled load: %q, %v, %v; want the configured value", v, ok, err)
	}
	if _, err := r.Location(context.Background()); err != nil {
		t.Fatalf("location after a cancelled load: %v", err)
	}
}

// A remote's git URL whose configuration could not be read is an error, not "the remote has no
// URL" (which sends the user's credential search down the wrong path).
func TestGitURLReportsUnreadConfiguration(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", dir, "remote", "add", "origin", "https://git.test/r.git").CombinedOutput(); err != nil {
		t.Fatalf("git remote add: %v\n%s", err, out)
	}
	r := New(Git{Dir: dir})
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if u, err := r.GitURL(gone, "upload", "origin"); err == nil {
		t.Errorf("GitURL with git unable to run: %q and no error", u)
	}
	if u, err := r.GitURL(context.Background(), "upload", "origin"); u != "https://git.test/r.git" || err != nil {
		t.Fatalf("GitURL: %q, %v", u, err)
	}
	if u, err := r.GitURL(context.Background(), "upload", "nowhere"); u != "" || err != nil {
		t.Fatalf("GitURL of a remote with no URL: %q, %v", u, err)
	}
}
