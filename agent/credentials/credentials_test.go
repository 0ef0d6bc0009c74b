package credentials

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	for _, k := range []string{"HF_TOKEN", "HF_TOKEN_PATH", "HF_HOME", "HF_ENDPOINT", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "NETRC"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	// The world's remote is on a Hub of the user's (HF_ENDPOINT), which the Hugging Face
	// credentials may reach; tests of other hosts unset it.
	t.Setenv("HF_ENDPOINT", "https://hub.example")
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

// git credential is asked as git-lfs asks it: for the git remote's URL when the LFS endpoint is on
// its scheme and host, with its path under credential.useHttpPath, so that a credential stored for
// the repository is found (and not another one of the same host); for the LFS URL itself when it
// is elsewhere. The URL's user name is not passed: it may be a token, and git prints it when it
// cannot prompt.
func TestGitCredentialAskedForTheRemotesPath(t *testing.T) {
	w := newWorld(t, "https://ghp_TOKENasUSER@git.example/org/model")
	t.Setenv("HF_ENDPOINT", "")
	in := filepath.Join(w.home, "helper.in")
	script := w.file("bin/helper", "#!/bin/sh\n[ \"$1\" = get ] || { cat >/dev/null; exit 0; }\nq=$(cat); printf '%s\\n--\\n' \"$q\" >> "+in+"\n"+
		"case \"$q\" in *path=org/model*) printf 'username=alice\\npassword=fromalice\\n';; *) printf 'username=bob\\npassword=frombob\\n';; esac\n", 0o755)
	w.git(w.repo, "config", "credential.helper", script)
	want(t, w.get("upload"), "Bearer frombob", "git credential")
	if b, _ := os.ReadFile(in); strings.Contains(string(b), "path=") {
		t.Errorf("a path was asked without credential.useHttpPath:\n%s", b)
	}
	os.Remove(in)
	w.git(w.repo, "config", "credential.useHttpPath", "true")
	want(t, w.get("upload"), "Bearer fromalice", "git credential")
	b, _ := os.ReadFile(in)
	if !strings.Contains(string(b), "path=org/model\n") {
		t.Errorf("the helper was not asked for the remote's path under credential.useHttpPath:\n%s", b)
	}
	if strings.Contains(string(b), "TOKENasUSER") {
		t.Errorf("the helper was given the URL's user name, which git prints when it cannot prompt:\n%s", b)
	}
	// An LFS endpoint on another host: its own URL.
	os.Remove(in)
	w.git(w.repo, "config", "lfs.url", "https://lfs.example/store/model.git/info/lfs")
	want(t, w.get("upload"), "Bearer frombob", "git credential")
	if b, _ := os.ReadFile(in); !strings.Contains(string(b), "host=lfs.example\n") || !strings.Contains(string(b), "path=store/model.git/info/lfs\n") {
		t.Errorf("the helper was not asked for the LFS URL:\n%s", b)
	}
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

// The Hugging Face credentials (HF_TOKEN, the token file) go to the Hub alone: huggingface.co,
// hf.co and HF_ENDPOINT's origin, over https (or HF_ENDPOINT's own scheme), not their subdomains.
// Any other endpoint, such as one a cloned repository's .lfsconfig names, gets what git-lfs
// would give it: here netrc, and with nothing else an error that says why HF_TOKEN was not used.
func TestHuggingFaceCredentialsGoToTheHubOnly(t *testing.T) {
	w := newWorld(t, hubURL)
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:9")
	t.Setenv("HF_TOKEN", "fromenv")
	w.file(".cache/huggingface/token", "fromcache", 0o600)
	for lfsURL, hub := range map[string]bool{
		"https://huggingface.co/org/m.git/info/lfs":          true,
		"https://HF.co/datasets/org/d.git/info/lfs":          true,
		"https://huggingface.co:443/org/m.git/info/lfs":      true,
		"http://127.0.0.1:9/org/m.git/info/lfs":              true,
		"http://huggingface.co/org/m.git/info/lfs":           false,
		"https://huggingface.co:8443/org/m.git/info/lfs":     false,
		"https://cdn-lfs.huggingface.co/org/m.git/info/lfs":  false,
		"https://huggingface.co.evil.example/org/m/info/lfs": false,
		"http://127.0.0.1:10/org/m.git/info/lfs":             false,
		"https://127.0.0.1:9/org/m.git/info/lfs":             false,
		"https://lfs.example/org/m.git/info/lfs":             false,
	} {
		w.git(w.repo, "config", "lfs.url", lfsURL)
		c, err := testResolver(t, "origin", "download").Get(context.Background())
		switch {
		case hub && (err != nil || c.Source != "HF_TOKEN"):
			t.Errorf("%s: got %q, %v; want HF_TOKEN", lfsURL, c.Source, err)
		case !hub && err == nil:
			t.Errorf("%s is not the Hub, but was given %q", lfsURL, c.Source)
		case !hub && (!strings.Contains(err.Error(), "go only to huggingface.co, hf.co and $HF_ENDPOINT") || strings.Contains(err.Error(), "from")):
			t.Errorf("%s: error %q does not say why HF_TOKEN was not used (or shows a secret)", lfsURL, err)
		}
	}
	w.file(".netrc", "machine lfs.example login u password fromnetrc\n", 0o600)
	w.git(w.repo, "config", "lfs.url", "https://lfs.example/org/m.git/info/lfs")
	want(t, w.get("upload"), "Bearer fromnetrc", "netrc")
}

// A password in the git remote's URL goes only to an LFS endpoint at the same origin (scheme,
// host and port), as git-lfs has it: a .lfsconfig pointing lfs.url at plain http or another port
// of the remote's host gets no password from the remote's URL.
func TestURLPasswordStaysOnItsOrigin(t *testing.T) {
	w := newWorld(t, "https://u:fromurl@git.example/org/model")
	t.Setenv("HF_ENDPOINT", "")
	for _, lfsURL := range []string{"http://git.example/org/model.git/info/lfs", "https://git.example:8443/org/model.git/info/lfs"} {
		w.git(w.repo, "config", "lfs.url", lfsURL)
		if c, err := testResolver(t, "origin", "upload").Get(context.Background()); err == nil {
			t.Errorf("%s was given %q", lfsURL, c.Source)
		}
	}
	w.git(w.repo, "config", "lfs.url", "https://git.example/org/model.git/info/lfs")
	want(t, w.get("upload"), "Bearer fromurl", "password in the URL")
}

// For another host than the endpoint's, git-lfs's order puts git-lfs-authenticate's header first,
// before netrc.
func TestSSHFirstForOtherHosts(t *testing.T) {
	w := newWorld(t, "ssh://git@git.example/org/model")
	t.Setenv("HF_ENDPOINT", "")
	w.file(".netrc", "machine git.example login u password fromnetrc\n", 0o600)
	t.Setenv("GIT_SSH", w.file("bin/ssh", "#!/bin/sh\n"+
		`printf '{"href":"https://git.example/org/model.git/info/lfs","header":{"Authorization":"Basic eDp5"},"expires_in":3600}'`+"\n", 0o755))
	want(t, w.get("download"), "Basic eDp5", "git-lfs-authenticate")
	// An answer without a header: the next sources.
	t.Setenv("GIT_SSH", w.file("bin/ssh2", "#!/bin/sh\n"+`printf '{"href":"https://git.example/org/model.git/info/lfs"}'`+"\n", 0o755))
	want(t, w.get("download"), "Bearer fromnetrc", "netrc")
}

// For SSH remotes the requests go to the href git-lfs-authenticate answers. When it answers no
// header and the href is on another host than the remote's, the credential is the one of the
// href's host, as git-lfs looks it up (credentials are keyed on the URL a request goes to): the
// remote host's netrc password and the Hugging Face token stay where they belong.
func TestSSHHrefElsewhereGetsItsOwnHostsCredential(t *testing.T) {
	const href = "https://lfs.other.example/org/model.git/info/lfs"
	answer := "#!/bin/sh\n" + `printf '{"href":"` + href + `"}'` + "\n"
	t.Run("netrc", func(t *testing.T) {
		w := newWorld(t, "ssh://git@git.example/org/model")
		t.Setenv("HF_ENDPOINT", "")
		t.Setenv("GIT_SSH", w.file("bin/ssh", answer, 0o755))
		w.file(".netrc", "machine git.example login u password fromgit\n", 0o600)
		if c, err := testResolver(t, "origin", "download").Get(context.Background()); err == nil {
			t.Fatalf("git.example's netrc password went to %s (%q)", href, c.Source)
		} else if !strings.Contains(err.Error(), "lfs.other.example") {
			t.Errorf("the error does not name the host asked for: %v", err)
		}
		w.file(".netrc", "machine git.example login u password fromgit\nmachine lfs.other.example login u password fromother\n", 0o600)
		want(t, w.get("download"), "Bearer fromother", "machine lfs.other.example")
	})
	t.Run("git credential", func(t *testing.T) {
		w := newWorld(t, "ssh://git@git.example/org/model")
		t.Setenv("HF_ENDPOINT", "")
		t.Setenv("GIT_SSH", w.file("bin/ssh", answer, 0o755))
		urlf := filepath.Join(w.home, "helper.in")
		script := w.file("bin/helper", "#!/bin/sh\ncat >> "+urlf+"\n[ \"$1\" = get ] && printf 'username=u\\npassword=fromhelper\\n'\nexit 0\n", 0o755)
		w.git(w.repo, "config", "credential.helper", script)
		want(t, w.get("download"), "Bearer fromhelper", "git credential")
		if b, _ := os.ReadFile(urlf); !strings.Contains(string(b), "host=lfs.other.example") || strings.Contains(string(b), "host=git.example") {
			t.Errorf("the helper was asked for %q, want lfs.other.example alone", b)
		}
	})
	t.Run("the Hub's token", func(t *testing.T) {
		w := newWorld(t, "git@hub.example:org/model")
		t.Setenv("HF_TOKEN", "fromenv")
		t.Setenv("GIT_SSH", w.file("bin/ssh", answer, 0o755))
		r := testResolver(t, "origin", "download")
		if c, err := r.Get(context.Background()); err == nil {
			t.Errorf("the Hugging Face token went to %s (%q)", href, c.Source)
		}
		if c, _, _ := r.For(context.Background(), href+"/objects/batch"); !c.None() {
			t.Errorf("For(%s) gave %q", href, c.Source)
		}
	})
}

// For gives the credential to the endpoint's origin (the Hub's two names count as one) and to no
// other host, without asking any source for it.
func TestForOnlyTheEndpointOrigin(t *testing.T) {
	w := newWorld(t, "https://hf.co/org/model")
	logf := w.helper("fromhelper")
	r := testResolver(t, "origin", "download")
	for u, ok := range map[string]bool{
		"https://cdn-lfs.hf.co/repos/x?X-Amz-Signature=s": false,
		"https://evil.example/api/xet-read-token/main":    false,
		"http://hf.co/org/model.git/info/lfs":             false,
	} {
		c, got, err := r.For(context.Background(), u)
		if err != nil || got != ok || !c.None() {
			t.Errorf("For(%s) = %q, %v, %v", u, c.Source, got, err)
		}
	}
	if b, _ := os.ReadFile(logf); len(b) != 0 {
		t.Errorf("the credential helper was asked for a host that gets nothing: %s", b)
	}
	for _, u := range []string{"https://hf.co/org/model.git/info/lfs/objects/batch", "https://huggingface.co/api/models/org/model/xet-write-token/main"} {
		if c, ok, err := r.For(context.Background(), u); err != nil || !ok || c.Authorization != "Bearer fromhelper" {
			t.Errorf("For(%s) = %q, %v, %v", u, c.Source, ok, err)
		}
	}
}

// Scrub takes every form of the credential's secret out of text a server sent back.
func TestScrub(t *testing.T) {
	c := bearer("hf_secretTOKEN", "HF_TOKEN")
	c.basic = basicAuth("user", "hf_secretTOKEN")
	text := "echo: Authorization: " + c.Authorization + " / " + c.basic + " / hf_secretTOKEN"
	got := c.Scrub(text)
	if strings.Contains(got, "hf_secretTOKEN") || strings.Contains(got, strings.TrimPrefix(c.basic, "Basic ")) {
		t.Errorf("Scrub left the secret: %q", got)
	}
}

// A caller whose context ends stops waiting for a credential helper that takes its time (a prompt,
// a keyring): git-lfs's helpers take no context, and an agent told to stop (SIGTERM, git-lfs gone)
// waited for the helper to end, 28 s with one that slept 30. The helper's answer, once it comes,
// is kept for the next caller.
func TestGetStopsWaitingForASlowHelper(t *testing.T) {
	w := newWorld(t, "https://git.example/org/repo.git")
	t.Setenv("HF_ENDPOINT", "")
	os.Unsetenv("HF_ENDPOINT")
	script := w.file("bin/slow-helper", "#!/bin/sh\ncat > /dev/null\nsleep 2\n"+
		"[ \"$1\" = get ] && printf 'username=u\\npassword=slow-secret\\n'\nexit 0\n", 0o755)
	w.git(w.repo, "config", "credential.helper", script)
	r := testResolver(t, "origin", "download")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	if _, err := r.Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get under a context that ended: %v, want its end", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Fatalf("Get returned %v after its context ended, waiting for the helper", d-200*time.Millisecond)
	}
	c, err := r.Get(context.Background()) // the same resolution, still under way
	if err != nil {
		t.Fatal(err)
	}
	want(t, c, "Bearer slow-secret", "git credential")
}

// A Get after a Reject does not take the answer of a resolution begun before it (which may be
// the credential just refused): it asks the helper again.
func TestGetAfterRejectAsksAgain(t *testing.T) {
	w := newWorld(t, "https://git.example/org/repo.git")
	t.Setenv("HF_ENDPOINT", "")
	os.Unsetenv("HF_ENDPOINT")
	count := filepath.Join(w.home, "gets")
	script := w.file("bin/counting-helper", "#!/bin/sh\ncat > /dev/null\n[ \"$1\" = get ] || exit 0\n"+
		"echo x >> "+count+"\nsleep 1\nprintf 'username=u\\npassword=p%s\\n' \"$(wc -l < "+count+" | tr -d ' ')\"\n", 0o755)
	w.git(w.repo, "config", "credential.helper", script)
	r := testResolver(t, "origin", "download")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := r.Get(ctx); err == nil {
		t.Fatal("Get returned before the helper answered")
	}
	r.Reject(Credential{}) // the caller's request was refused meanwhile
	c, err := r.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want(t, c, "Bearer p2", "git credential")
}
