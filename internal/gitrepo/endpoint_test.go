package gitrepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The resolver answers what git-lfs answers: for each configuration, the download endpoint of every
// remote equals what the real `git lfs env` prints for it.
func TestEndpointMatchesGitLFS(t *testing.T) {
	gitLFSHome(t)
	cases := []struct {
		name      string
		lfsconfig string     // committed .lfsconfig ("" = none)
		config    [][]string // git config key value, in the repository
		bare      bool       // resolve in a bare clone of the repository
	}{
		{name: "https remote", config: [][]string{{"remote.origin.url", "https://h.test/org/r.git"}}},
		{name: "no .git suffix", config: [][]string{{"remote.origin.url", "https://h.test/org/r/"}}},
		{name: "lfs.url in .lfsconfig beats remote lfsurl", lfsconfig: "[lfs]\n\turl = https://a.test/lfs\n",
			config: [][]string{{"remote.origin.url", "https://h.test/r.git"}, {"remote.origin.lfsurl", "https://b.test/lfs"}}},
		{name: "git config beats .lfsconfig", lfsconfig: "[lfs]\n\turl = https://a.test/lfs\n",
			config: [][]string{{"remote.origin.url", "https://h.test/r.git"}, {"lfs.url", "https://c.test/lfs"}}},
		{name: "remote lfsurl from .lfsconfig", lfsconfig: "[remote \"origin\"]\n\tlfsurl = https://a.test/o\n",
			config: [][]string{{"remote.origin.url", "https://h.test/r.git"}}},
		{name: "unsafe .lfsconfig keys", lfsconfig: "[remote \"origin\"]\n\turl = https://evil.test/r\n[url \"https://evil.test/\"]\n\tinsteadOf = https://h.test/\n",
			config: [][]string{{"remote.origin.url", "https://h.test/r.git"}}},
		{name: "pushurl does not change downloads", lfsconfig: "[lfs]\n\tpushurl = https://p.test/lfs\n",
			config: [][]string{{"remote.origin.url", "https://h.test/r.git"}, {"remote.origin.pushurl", "https://pp.test/r.git"}, {"remote.origin.lfspushurl", "https://lp.test/r"}}},
		{name: "insteadOf", config: [][]string{{"remote.origin.url", "hf:org/r"}, {"url.https://huggingface.test/.insteadOf", "hf:"},
			{"url.https://longer.test/.insteadOf", "hf:org/"}}},
		{name: "two remotes", config: [][]string{{"remote.origin.url", "https://h.test/r.git"}, {"remote.up.url", "https://u.test/r"},
			{"remote.up.lfsurl", "https://u.test/lfs"}, {"remote.Other.url", "https://o.test/x.git"}}},
		{name: "scp-like ssh", config: [][]string{{"remote.origin.url", "git@h.test:org/r.git"}}},
		{name: "ssh url with port", config: [][]string{{"remote.origin.url", "ssh://git@h.test:2222/org/r"}}},
		{name: "git protocol", config: [][]string{{"remote.origin.url", "git://h.test/org/r.git"}, {"lfs.gitprotocol", "http"}}},
		{name: "file url", config: [][]string{{"remote.origin.url", "file://@REMOTE@"}}},
		{name: "absolute path", config: [][]string{{"remote.origin.url", "@REMOTE@"}}},
		{name: "relative path", config: [][]string{{"remote.origin.url", "../remote.git"}}},
		{name: "work tree remote", config: [][]string{{"remote.origin.url", "@NONBARE@"}}},
		{name: "lfs.url a path", lfsconfig: "[lfs]\n\turl = @REMOTE@\n", config: [][]string{{"remote.origin.url", "https://h.test/r.git"}, {"remote.origin.lfsurl", "@NONBARE@"}}},
		{name: "missing path", config: [][]string{{"remote.origin.url", "/nonexistent/r.git"}}},
		{name: "bare repository", lfsconfig: "[lfs]\n\turl = https://a.test/bare\n", config: [][]string{{"remote.origin.url", "https://h.test/r.git"}}, bare: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			subst := strings.NewReplacer("@REMOTE@", filepath.Join(dir, "remote.git"), "@NONBARE@", filepath.Join(dir, "nonbare"))
			run(t, dir, "init", "-q", "--bare", "remote.git")
			run(t, dir, "init", "-q", "nonbare")
			work := filepath.Join(dir, "work")
			run(t, dir, "init", "-q", "work")
			if c.lfsconfig != "" {
				if err := os.WriteFile(filepath.Join(work, ".lfsconfig"), []byte(subst.Replace(c.lfsconfig)), 0o644); err != nil {
					t.Fatal(err)
				}
				run(t, work, "add", ".lfsconfig")
				run(t, work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
			}
			if c.bare {
				run(t, dir, "clone", "-q", "--bare", "work", "bareclone.git")
				work = filepath.Join(dir, "bareclone.git")
			}
			for _, kv := range c.config {
				run(t, work, "config", "--add", kv[0], subst.Replace(kv[1]))
			}
			want := lfsEnvEndpoints(t, work)
			if len(want) == 0 {
				t.Fatal("git lfs env printed no endpoint")
			}
			t.Logf("git lfs env: %q", want)
			r := New(Git{Dir: work})
			for remote, url := range want {
				ep, err := r.Endpoint(context.Background(), "download", remote)
				if err != nil || ep.Url != url {
					t.Errorf("remote %s: endpoint %q (from %s %q), %v; git-lfs says %q", remote, ep.Url, ep.Source, ep.Raw, err, url)
				}
			}
		})
	}
}

// lfsEnvEndpoints runs `git lfs env` in dir: remote name → endpoint URL.
func lfsEnvEndpoints(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command("git", "lfs", "env")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git lfs env: %v", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(k, "Endpoint") {
			continue
		}
		v, _, _ = strings.Cut(v, " (auth=")
		name := "origin"
		if i := strings.IndexByte(k, '('); i > 0 {
			name = strings.TrimSuffix(k[i+1:], ")")
		}
		m[name] = v
	}
	return m
}

func run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// A .lfsconfig that is only in the index (staged, then removed from the work tree) is read from the
// index as git-lfs reads it, whatever form the index takes: split (core.splitIndex: the entries live
// in a shared index file), sparse, or version 4 (prefix-compressed paths). HEAD's, which differs,
// must not be taken instead.
func TestIndexLFSConfigMatchesGitLFS(t *testing.T) {
	gitLFSHome(t)
	for _, form := range []struct {
		name string
		args [][]string // git commands that put the index in that form
	}{
		{"plain", nil},
		{"split", [][]string{{"update-index", "--split-index"}}},
		{"version 4", [][]string{{"update-index", "--index-version", "4"}}},
		{"sparse", [][]string{{"config", "index.sparse", "true"}, {"sparse-checkout", "set", "--cone", "keep"}}},
	} {
		t.Run(form.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "work")
			run(t, filepath.Dir(work), "init", "-q", "work")
			commit := func(msg string) {
				run(t, work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", msg)
			}
			for _, f := range []string{"keep/a", "other/b"} {
				if err := os.MkdirAll(filepath.Join(work, filepath.Dir(f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(work, f), []byte(f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write := func(url string) {
				if err := os.WriteFile(filepath.Join(work, ".lfsconfig"), []byte("[lfs]\n\turl = "+url+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				run(t, work, "add", ".")
			}
			write("https://head.test/lfs")
			commit("head")
			write("https://index.test/lfs")
			run(t, work, "config", "remote.origin.url", "https://h.test/r.git")
			for _, a := range form.args {
				run(t, work, a...)
			}
			if err := os.Remove(filepath.Join(work, ".lfsconfig")); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			want := lfsEnvEndpoints(t, work)["origin"]
			if want != "https://index.test/lfs" {
				t.Fatalf("git lfs env says %q: the case does not set up what it means to", want)
			}
			ep, err := New(Git{Dir: work}).Endpoint(context.Background(), "download", "origin")
			if err != nil || ep.Url != want {
				t.Errorf("endpoint %q (from %s %q), %v; git-lfs says %q", ep.Url, ep.Source, ep.Raw, err, want)
			}
		})
	}
}
