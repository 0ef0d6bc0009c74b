package credentials

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
)

// world is a repository in a fresh HOME with no credential anywhere; tests add sources to it.
type world struct {
	t    *testing.T
	home string
	repo string
}

func newWorld(t *testing.T, remoteURL string) *world {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required under CI=true")
		}
		t.Skip("git is not installed")
	}
	home := t.TempDir()
	for _, k := range []string{"HF_TOKEN", "HF_TOKEN_PATH", "HF_HOME", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "NETRC"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	w := &world{t: t, home: home, repo: filepath.Join(home, "repo")}
	w.git("", "init", "-q", w.repo)
	w.git(w.repo, "remote", "add", "origin", remoteURL)
	t.Chdir(w.repo)
	return w
}

func (w *world) git(dir string, args ...string) {
	w.t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (w *world) file(path, text string, mode os.FileMode) string {
	w.t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(w.home, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// helper installs a credential helper answering password pass and logging its actions to a file,
// whose path it returns.
func (w *world) helper(pass string) string {
	w.t.Helper()
	logf := filepath.Join(w.home, "helper.log")
	script := w.file("bin/helper", "#!/bin/sh\necho \"$1\" >> "+logf+"\ncat > /dev/null\n"+
		"[ \"$1\" = get ] && printf 'username=hf_user\\npassword="+pass+"\\n'\nexit 0\n", 0o755)
	w.git(w.repo, "config", "credential.helper", script)
	return logf
}

func (w *world) get(operation string) Credential {
	w.t.Helper()
	c, err := testResolver(w.t, "origin", operation).Get(context.Background())
	if err != nil {
		w.t.Fatalf("Get: %v", err)
	}
	if strings.Contains(c.String(), strings.TrimPrefix(c.Authorization, "Bearer ")) && c.Authorization != "" {
		w.t.Errorf("the credential's String shows the secret: %q", c.String())
	}
	return c
}

// testResolver is New in the current directory's repository, with the process's environment (a
// fresh config snapshot each time: the tests change config between calls).
func testResolver(t *testing.T, remote, operation string) *Resolver {
	t.Helper()
	r, err := New(context.Background(), gitrepo.New(gitrepo.Git{}), EnvFrom(os.Environ()), remote, operation)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func want(t *testing.T, c Credential, auth, source string) {
	t.Helper()
	if c.Authorization != auth || !strings.Contains(c.Source, source) {
		t.Errorf("got %q from %q, want %q from a source naming %q", c.Authorization, c.Source, auth, source)
	}
}

const hubURL = "https://hub.example/org/model"

func TestEachSourceAlone(t *testing.T) {
	t.Run("access none", func(t *testing.T) {
		w := newWorld(t, hubURL)
		w.file(".netrc", "machine hub.example login u password fromnetrc\n", 0o600)
		w.git(w.repo, "config", "lfs."+hubURL+".git/info/lfs.access", "none")
		want(t, w.get("download"), "", "access = none")
	})
	t.Run("URL user info", func(t *testing.T) {
		newWorld(t, "https://someone:fromurl@hub.example/org/model")
		c, err := testResolver(t, "origin", "upload").Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want(t, c, "Bearer fromurl", "password in the URL")
		if strings.Contains(c.Source, "fromurl") {
			t.Errorf("source shows the password: %s", c.Source)
		}
	})
	t.Run("HF_TOKEN trimmed", func(t *testing.T) {
		w := newWorld(t, hubURL)
		t.Setenv("HF_TOKEN", "  fromenv\n")
		c := w.get("upload")
		want(t, c, "Bearer fromenv", "HF_TOKEN")
		if c.ForLFS() != c.Authorization {
			t.Errorf("a token without a user name goes to LFS routes as %q", c.ForLFS())
		}
	})
	t.Run("HF_TOKEN_PATH", func(t *testing.T) {
		w := newWorld(t, hubURL)
		t.Setenv("HF_TOKEN_PATH", w.file("elsewhere/tok", "frompath\n", 0o600))
		want(t, w.get("upload"), "Bearer frompath", "elsewhere/tok")
	})
	t.Run("HF_HOME token", func(t *testing.T) {
		w := newWorld(t, hubURL)
		t.Setenv("HF_HOME", filepath.Join(w.home, "hfhome"))
		w.file("hfhome/token", "fromhfhome", 0o600)
		want(t, w.get("upload"), "Bearer fromhfhome", "hfhome/token")
	})
	t.Run("default token file", func(t *testing.T) {
		w := newWorld(t, hubURL)
		w.file(".cache/huggingface/token", "fromcache\n", 0o600)
		want(t, w.get("upload"), "Bearer fromcache", ".cache/huggingface/token")
	})
	t.Run("netrc", func(t *testing.T) {
		w := newWorld(t, hubURL)
		w.file(".netrc", "machine other.example login u password wrong\nmachine hub.example login u password fromnetrc\n", 0o600)
		want(t, w.get("upload"), "Bearer fromnetrc", "netrc")
	})
	t.Run("git credential", func(t *testing.T) {
		w := newWorld(t, hubURL)
		logf := w.helper("fromhelper")
		r := testResolver(t, "origin", "upload")
		c, err := r.Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want(t, c, "Bearer fromhelper", "git credential")
		if c.ForLFS() != "Basic "+base64.StdEncoding.EncodeToString([]byte("hf_user:fromhelper")) {
			t.Errorf("LFS routes get %q, want Basic with the helper's user name", c.ForLFS())
		}
		r.Approve(c)
		r.Approve(c) // once per credential
		r.Reject(c)
		b, _ := os.ReadFile(logf)
		if got := strings.Fields(string(b)); strings.Join(got, " ") != "get store erase" {
			t.Errorf("helper saw %v, want get, store (approve), erase (reject)", got)
		}
	})
	t.Run("ssh git-lfs-authenticate", func(t *testing.T) {
		w := newWorld(t, "ssh://git@hub.example:2222/org/model")
		argsf := filepath.Join(w.home, "ssh.args")
		basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("git:fromssh"))
		t.Setenv("GIT_SSH", w.file("bin/ssh", "#!/bin/sh\necho \"$@\" >> "+argsf+"\n"+
			`printf '{"href":"https://hub.example/org/model.git/info/lfs","header":{"Authorization":"`+basic+`"},"expires_in":3600}'`+"\n", 0o755))
		want(t, w.get("download"), basic, "git-lfs-authenticate")
		b, _ := os.ReadFile(argsf)
		if !strings.Contains(string(b), "2222") || !strings.Contains(string(b), "git@hub.example git-lfs-authenticate /org/model download") {
			t.Errorf("ssh ran with %q", b)
		}
	})
}

// The sources are tried in the documented order: each one present wins over every later one.
func TestSourceOrder(t *testing.T) {
	w := newWorld(t, hubURL)
	w.helper("fromhelper")
	w.file(".netrc", "machine hub.example login u password fromnetrc\n", 0o600)
	tokFile := w.file(".cache/huggingface/token", "fromcache", 0o600)
	t.Setenv("HF_TOKEN", "fromenv")
	w.git(w.repo, "remote", "set-url", "origin", "https://u:fromurl@hub.example/org/model")

	want(t, w.get("upload"), "Bearer fromurl", "URL")
	w.git(w.repo, "remote", "set-url", "origin", hubURL)
	want(t, w.get("upload"), "Bearer fromenv", "HF_TOKEN")
	os.Unsetenv("HF_TOKEN")
	want(t, w.get("upload"), "Bearer fromcache", "token file")
	os.Remove(tokFile)
	want(t, w.get("upload"), "Bearer fromnetrc", "netrc")
	os.Remove(filepath.Join(w.home, ".netrc"))
	want(t, w.get("upload"), "Bearer fromhelper", "git credential")
}

// The host is the LFS endpoint's (lfs.url), not the git remote's.
func TestHostOfTheLFSEndpoint(t *testing.T) {
	w := newWorld(t, "https://github.example/team/code")
	w.git(w.repo, "config", "lfs.url", hubURL+".git/info/lfs")
	w.file(".netrc", "machine github.example login u password wronghost\nmachine hub.example login u password righthost\n", 0o600)
	r := testResolver(t, "origin", "download")
	if r.Host() != "https://hub.example" {
		t.Errorf("host %q", r.Host())
	}
	want(t, w.get("download"), "Bearer righthost", "netrc")
}

// With no source at all, the error says which host and what to do.
func TestNoCredential(t *testing.T) {
	newWorld(t, hubURL)
	_, err := testResolver(t, "origin", "upload").Get(context.Background())
	if err == nil || !strings.Contains(err.Error(), "https://hub.example") || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("error %v", err)
	}
}

// For SSH remotes the LFS endpoint is the href git-lfs-authenticate answers.
func TestSSHHref(t *testing.T) {
	w := newWorld(t, "git@hub.example:org/model")
	t.Setenv("GIT_SSH", w.file("bin/ssh", "#!/bin/sh\n"+
		`printf '{"href":"http://127.0.0.1:9/org/model.git/info/lfs","header":{"Authorization":"Basic eDp5"},"expires_in":3600}'`+"\n", 0o755))
	u, err := testResolver(t, "origin", "upload").LFSURL(context.Background())
	if err != nil || u != "http://127.0.0.1:9/org/model.git/info/lfs" {
		t.Fatalf("LFSURL = %q, %v", u, err)
	}
}

// The resolver reads the environment it is given, not the process's.
func TestEnvIsGiven(t *testing.T) {
	newWorld(t, hubURL)
	env := EnvFrom(os.Environ())
	env.HFToken = "given"
	r, err := New(context.Background(), gitrepo.New(gitrepo.Git{}), env, "origin", "upload")
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want(t, c, "Bearer given", "HF_TOKEN")
}
