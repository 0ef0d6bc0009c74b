package test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
)

// The Hub emulator's tokens: a writer, a reader, and one for another repository only.
const (
	hubWriteToken = "hf_writeWRITEwrite0123456789"
	hubReadToken  = "hf_readREADread0123456789"
	hubOtherToken = "hf_otherOTHERother0123456789"
)

// hubServer is xet-server in Hub-compatible mode with its access log.
type hubServer struct {
	*xetServer
	log *logbuf.Buffer
}

// requests counts the emulator's access-log lines whose path starts with prefix (and, when method
// is not "", have that method).
func (h *hubServer) requests(method, prefix string) int {
	n := 0
	for _, l := range strings.Split(h.log.String(), "\n") {
		if strings.Contains(l, `"path":"`+prefix) && (method == "" || strings.Contains(l, `"method":"`+method+`"`)) {
			n++
		}
	}
	return n
}

// startHub starts the Hub emulator; mods change its configuration further.
func startHub(t *testing.T, tokenTTL time.Duration, mods ...func(*server.Config)) *hubServer {
	t.Helper()
	lb := &logbuf.Buffer{}
	toks, err := server.ParseHubTokens(strings.NewReader(
		hubWriteToken + ":writer:write\n" + hubReadToken + ":reader:read\n" + hubOtherToken + ":other:write:someone/else\n"))
	if err != nil {
		t.Fatal(err)
	}
	legacy := t.TempDir()
	s := startServer(t, "", append([]func(*server.Config){func(c *server.Config) {
		c.Hub = &server.HubCompat{Tokens: toks, LegacyDir: legacy, Public: []string{"public/*"}}
		c.TokenTTL = tokenTTL
		c.Log = zerolog.New(lb)
	}}, mods...)...)
	return &hubServer{xetServer: s, log: lb}
}

// hubEnv is a test world whose Hub is the emulator (HF_ENDPOINT) with `install --hub` run.
func hubEnv(t *testing.T, h *hubServer) *env {
	t.Helper()
	e := newEnv(t)
	e.vars = append(e.vars, "HF_ENDPOINT="+h.url)
	out, err := e.cmd("", filepath.Join(binDir, "git-xet-transfer"), "install", "--hub").CombinedOutput()
	if err != nil {
		t.Fatalf("install --hub: %v\n%s", err, out)
	}
	return e
}

// hubRepo makes a work tree whose LFS URL is repo on the emulator (a local bare remote holds the
// git objects).
func hubRepo(t *testing.T, e *env, h *hubServer, repo string) (work, remote string) {
	return batchRepo(t, e, h.url+"/"+repo+".git/info/lfs")
}

// tensor is n float32 values of a smooth signal, as model weights look to a compressor.
func tensor(n int) []byte {
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(math.Sin(float64(i)/97)*0.02)))
	}
	return b
}

// With `install --hub`, a Hub remote's pushes, clones and pulls go through Xet: the downloads are
// CAS reconstructions with ranged xorb fetches, never the bridge; a 1 %-edited version uploads only
// its changed chunks; the 2-second CAS tokens are refreshed at the Hub's token route with the user's
// token.
func TestHubPushCloneEditPull(t *testing.T) {
	h := startHub(t, 2*time.Second)
	e := hubEnv(t, h)
	e.vars = append(e.vars, "HF_TOKEN="+hubWriteToken)
	e.git("", "config", "--global", "lfs.concurrenttransfers", "8")
	work, remote := hubRepo(t, e, h, "org/model")
	big := testutil.RandomBytes(50<<20, 7919)
	writeFile(t, filepath.Join(work, "model.bin"), big)
	writeFile(t, filepath.Join(work, "tensor.bin"), tensor(5<<20))
	writeFile(t, filepath.Join(work, "notes.bin"), []byte(strings.Repeat("A 1 KB text file of notes.\n", 38)))
	for i := 0; i < 300; i++ {
		writeFile(t, filepath.Join(work, "small", fmt.Sprintf("f%03d.bin", i)), testutil.RandomBytes(100+i*10, uint64(23757+i)))
	}
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "v1")
	began := time.Now()
	e.git(work, "push", "-q", "origin", "main")
	t.Logf("push of 303 files: %v", time.Since(began))
	if os.Getenv("HUB_DEBUG") != "" {
		b, _ := os.ReadFile(e.log)
		os.WriteFile("/tmp/hub-agent.log", b, 0o644)
		os.WriteFile("/tmp/hub-server.log", []byte(h.log.String()), 0o644)
	}
	if n := len(e.logLines(`"op":"upload"`, `"mode":"hub"`, "transfer complete")); n != 303 {
		t.Fatalf("%d uploads went through the Hub's xet action, want 303", n)
	}
	if n := h.requests("GET", "/api/models/org/model/xet-write-token/main"); n < 1 {
		t.Errorf("the 2 s CAS token was never refreshed at the write-token route (%d calls)", n)
	}

	clone := filepath.Join(e.home, "clone")
	began = time.Now()
	cl := e.cmd("", "git", "clone", "-q", remote, clone)
	cl.Env = append(cl.Env, "GIT_LFS_SKIP_SMUDGE=0")
	if out, err := cl.CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	t.Logf("clone: %v", time.Since(began))
	if n := sameTree(t, work, clone); n < 303 {
		t.Fatalf("compared %d files", n)
	}
	checkLFSObjects(t, clone)
	if n := h.requests("GET", "/xet-bridge-us/"); n != 0 {
		t.Errorf("%d downloads went through the bridge, want 0", n)
	}
	if h.requests("GET", "/v2/reconstructions/") < 303 || h.requests("GET", "/xorbs/") < 1 {
		t.Errorf("downloads did not go through CAS reconstructions (%d) and xorb fetches (%d)",
			h.requests("GET", "/v2/reconstructions/"), h.requests("GET", "/xorbs/"))
	}

	// A 1 % scattered edit: ten 50 KiB patches.
	for i := 0; i < 10; i++ {
		copy(big[i*(5<<20)+12345:], testutil.RandomBytes(50<<10, uint64(31676+i)))
	}
	writeFile(t, filepath.Join(work, "model.bin"), big)
	e.git(work, "commit", "-qam", "v2")
	before := h.requests("POST", "/v1/xorbs/")
	e.git(work, "push", "-q", "origin", "main")
	edit := e.logLines(`"op":"upload"`, `"mode":"hub"`, "transfer complete")
	last := edit[len(edit)-1]
	if !strings.Contains(last, `"size":52428800`) || newBytes(t, last) > 5<<20 {
		t.Errorf("the 1 %% edit of 50 MB uploaded too much: %s", last)
	}
	t.Logf("edit push: %d new xorbs; %s", h.requests("POST", "/v1/xorbs/")-before, last)
	e.git(clone, "pull", "-q", "origin", "main")
	sameTree(t, work, clone)
	if n := h.requests("GET", "/xet-bridge-us/"); n != 0 {
		t.Errorf("%d downloads went through the bridge, want 0", n)
	}
}

// newBytes reads new_bytes out of a "transfer complete" log line.
func newBytes(t *testing.T, line string) int64 {
	t.Helper()
	i := strings.Index(line, `"new_bytes":`)
	if i < 0 {
		t.Fatalf("no new_bytes in %s", line)
	}
	var n int64
	fmt.Sscanf(line[i+len(`"new_bytes":`):], "%d", &n)
	return n
}

// A dataset repository works, and a read-only token can push to a pull-request ref (the Hub issues
// write tokens for refs/pr/N to readers) but not to main, with a message naming the repository and
// the access it needs.
func TestHubDatasetAndPullRequestRef(t *testing.T) {
	h := startHub(t, 2*time.Second) // short: the write token is asked for again at its route
	e := hubEnv(t, h)
	e.vars = append(e.vars, "HF_TOKEN="+hubReadToken)
	work, remote := hubRepo(t, e, h, "datasets/org/data")
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(3<<20, 39595))
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "data")

	out, err := e.gitErr(work, "push", "origin", "main")
	if err == nil {
		t.Fatalf("a read-only token pushed to main:\n%s", out)
	}
	for _, want := range []string{"datasets/org/data", "write access", "403"} {
		if !strings.Contains(out, want) {
			t.Errorf("push error does not mention %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, hubReadToken) {
		t.Errorf("the token leaked into the output:\n%s", out)
	}

	e.vars = append(e.vars, "GIT_XET_REF=refs/pr/1")
	e.git(work, "push", "-q", "origin", "HEAD:refs/pr/1")
	if h.requests("GET", "/api/datasets/org/data/xet-write-token/refs/pr/1") < 1 { // the log shows paths decoded
		t.Errorf("no write token was asked for refs%%2Fpr%%2F1")
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "init", "-q", clone)
	e.git(clone, "remote", "add", "origin", remote)
	e.git(clone, "fetch", "-q", "origin", "refs/pr/1")
	e.git(clone, "checkout", "-q", "FETCH_HEAD")
	sameTree(t, work, clone)
	if h.requests("GET", "/xet-bridge-us/") != 0 || h.requests("GET", "/api/datasets/org/data/xet-read-token/") < 1 {
		t.Errorf("the download did not go through the read token of main and the CAS:\n%s", h.log.String())
	}
}

// Objects pushed by a client without Xet are kept whole by the Hub (not yet migrated); their
// download href is a plain signed CDN URL, which the agent fetches and verifies itself.
func TestHubLegacyObjects(t *testing.T) {
	h := startHub(t, time.Minute)
	plain := newEnv(t) // git-lfs only: its upload batch offers no xet, the Hub keeps the files whole
	plain.git("", "config", "--global", "credential.helper", "store")
	writeFile(t, filepath.Join(plain.home, ".git-credentials"), []byte(strings.Replace(h.url, "://", "://hf_user:"+hubWriteToken+"@", 1)+"\n"))
	plain.git("", "lfs", "install")
	work, remote := hubRepo(t, plain, h, "org/legacy")
	writeFile(t, filepath.Join(work, "old.bin"), testutil.RandomBytes(2<<20, 1))
	plain.git(work, "add", ".")
	plain.git(work, "commit", "-qm", "legacy")
	plain.git(work, "push", "-q", "origin", "main")
	if n := h.requests("PUT", "/org/legacy.git/info/lfs/objects/"); n != 1 {
		t.Fatalf("%d basic uploads, want 1", n)
	}

	e := hubEnv(t, h)
	e.vars = append(e.vars, "HF_TOKEN="+hubReadToken)
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	if n := len(e.logLines(`"mode":"hub-lfs"`, "transfer complete")); n != 1 {
		t.Errorf("%d downloads by the plain verified GET, want 1", n)
	}
	if h.requests("GET", "/cdn-lfs/") != 1 || h.requests("GET", "/xet-bridge-us/") != 0 {
		t.Errorf("want one CDN GET and no bridge GET")
	}
}

// Without --hub (batch mode) git-lfs asks the Hub itself: uploads come to the agent as xet actions
// whose token refresh uses the user's credential (here from git credential, as git-lfs's own), and
// downloads go through the bridge with git-lfs's basic adapter. `status` tells the two modes apart.
func TestHubBatchMode(t *testing.T) {
	h := startHub(t, 2*time.Second)
	e := newEnv(t)
	e.vars = append(e.vars, "HF_ENDPOINT="+h.url)
	e.install()
	e.git("", "config", "--global", "credential.helper", "store")
	writeFile(t, filepath.Join(e.home, ".git-credentials"), []byte(strings.Replace(h.url, "://", "://hf_user:"+hubWriteToken+"@", 1)+"\n"))
	work, remote := hubRepo(t, e, h, "org/batch")
	writeFile(t, filepath.Join(work, "w.bin"), testutil.RandomBytes(4<<20, 2))
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "w")
	e.git(work, "remote", "add", "hub", h.url+"/org/batch")
	status := func() string {
		out, _ := e.cmd(work, filepath.Join(binDir, "git-xet-transfer"), "status").CombinedOutput()
		return string(out)
	}
	if s := status(); !strings.Contains(s, "batch mode") || !strings.Contains(s, "install --hub") {
		t.Errorf("status does not say the Hub remote is in batch mode:\n%s", s)
	}
	e.git(work, "push", "-q", "origin", "main")
	if n := len(e.logLines(`"op":"upload"`, `"mode":"batch"`, "transfer complete")); n != 1 {
		t.Fatalf("%d xet uploads, want 1", n)
	}
	if h.requests("GET", "/api/models/org/batch/xet-write-token/main") < 1 {
		t.Errorf("the 2 s token was not refreshed at the write-token route")
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	if h.requests("GET", "/xet-bridge-us/") != 1 {
		t.Errorf("batch-mode download did not use the bridge")
	}
	if out, err := e.cmd("", filepath.Join(binDir, "git-xet-transfer"), "install", "--hub").CombinedOutput(); err != nil {
		t.Fatalf("install --hub: %v\n%s", err, out)
	}
	if s := status(); !strings.Contains(s, "standalone mode") {
		t.Errorf("status does not show standalone mode after install --hub:\n%s", s)
	}
	out, err := e.cmd("", filepath.Join(binDir, "git-xet-transfer"), "uninstall").CombinedOutput()
	if err != nil || !strings.Contains(string(out), ".standalonetransferagent") {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	if v, _ := e.gitErr("", "config", "--global", "--get-regexp", "standalonetransferagent"); strings.TrimSpace(v) != "" {
		t.Errorf("uninstall left %s", v)
	}
}

// An SSH remote gets its credential and LFS URL from `ssh git-lfs-authenticate` (a fake ssh here),
// whose Authorization header is forwarded verbatim.
func TestHubSSHRemote(t *testing.T) {
	h := startHub(t, time.Minute)
	e := hubEnv(t, h)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("git:"+hubWriteToken))
	args := fakeSSH(t, e, `{"href":"`+h.url+`/org/ssh.git/info/lfs","header":{"Authorization":"`+basic+`"},"expires_in":3600}`)
	work, remote := sshRepo(t, e, h)
	e.pushAndClone(work, remote, "", testutil.RandomBytes(1<<20, 3), "s")
	cloneSame(t, e, work, remote)
	b, _ := os.ReadFile(args)
	if !strings.Contains(string(b), "git-lfs-authenticate /org/ssh upload") || !strings.Contains(string(b), "git-lfs-authenticate /org/ssh download") {
		t.Errorf("ssh was not asked for upload and download credentials:\n%s", b)
	}
	if n := len(e.logLines(`"mode":"hub"`, "transfer complete")); n != 2 {
		t.Errorf("%d transfers in hub mode, want 2", n)
	}
}

// An answer with no header that names the Hub (HF_ENDPOINT's origin, not the https URL git-lfs
// guesses from the remote) gets the Hub's credential, HF_TOKEN: the sources are asked for the
// host the requests go to, as git-lfs asks them.
func TestHubSSHRemoteWithoutHeader(t *testing.T) {
	h := startHub(t, time.Minute)
	e := hubEnv(t, h)
	e.vars = append(e.vars, "HF_TOKEN="+hubWriteToken)
	fakeSSH(t, e, `{"href":"`+h.url+`/org/ssh.git/info/lfs"}`)
	work, remote := sshRepo(t, e, h)
	e.pushAndClone(work, remote, "", testutil.RandomBytes(1<<20, 5), "s")
	cloneSame(t, e, work, remote)
}

// With two accounts of one Hub in git's credential store, each stored for a repository
// (credential.useHttpPath), the repository's own is the one used, as git-lfs asks git credential
// for the LFS URL's path; the other account, listed first, may not write to the repository.
func TestHubCredentialOfTheRepositorysPath(t *testing.T) {
	h := startHub(t, time.Minute)
	e := hubEnv(t, h)
	store := filepath.Join(e.home, ".git-credentials")
	writeFile(t, store, []byte(strings.Replace(h.url, "http://", "http://other:"+hubOtherToken+"@", 1)+"/someone/else.git/info/lfs\n"+
		strings.Replace(h.url, "http://", "http://writer:"+hubWriteToken+"@", 1)+"/org/model.git/info/lfs\n"))
	e.git("", "config", "--global", "credential.helper", "store --file="+store)
	e.git("", "config", "--global", "credential.useHttpPath", "true")
	work, remote := hubRepo(t, e, h, "org/model")
	e.pushAndClone(work, remote, "", testutil.RandomBytes(1<<20, 6), "w")
	cloneSame(t, e, work, remote)
}

// fakeSSH puts an ssh in e's environment (GIT_SSH) that answers git-lfs-authenticate with answer
// and refuses git-lfs-transfer (so git-lfs falls back to HTTP), and returns the file logging its
// arguments.
func fakeSSH(t *testing.T, e *env, answer string) (argsFile string) {
	t.Helper()
	argsFile = filepath.Join(e.home, "ssh.args")
	sshScript := filepath.Join(e.home, "bin", "ssh")
	writeFile(t, sshScript, []byte("#!/bin/sh\necho \"$@\" >> "+argsFile+"\ncase \"$*\" in *git-lfs-transfer*) echo 'git-lfs-transfer: not found' >&2; exit 127;; esac\n"+
		"printf '"+answer+"'\n"))
	if err := os.Chmod(sshScript, 0o755); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, "GIT_SSH="+sshScript)
	return argsFile
}

// sshRepo is batchRepo's work tree and bare remote for the remote ssh://git@<h's host:port>/org/ssh,
// with the agent configured for it.
func sshRepo(t *testing.T, e *env, h *hubServer) (work, remote string) {
	t.Helper()
	// git-lfs keys an SSH remote's settings by the https URL it guesses from it (port dropped), as
	// install --hub's https://hf.co/ key covers git@hf.co:... remotes.
	hostport := strings.TrimPrefix(h.url, "http://")
	work, remote = batchRepo(t, e, "ssh://git@"+hostport+"/org/ssh")
	e.git("", "config", "--global", "lfs.https://127.0.0.1/.standalonetransferagent", "xet")
	return work, remote
}

// A wrong token fails with a message naming the credential's source, and never shows the token.
func TestHubWrongToken(t *testing.T) {
	h := startHub(t, time.Minute)
	e := hubEnv(t, h)
	e.vars = append(e.vars, "HF_TOKEN=hf_notAtoken000")
	work, _ := hubRepo(t, e, h, "org/model")
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(1000, 4))
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "a")
	out, err := e.gitErr(work, "push", "origin", "main")
	if err == nil {
		t.Fatal("push with a wrong token succeeded")
	}
	for _, want := range []string{"HF_TOKEN", "401", "/org/model.git/info/lfs/objects/batch"} {
		if !strings.Contains(out, want) {
			t.Errorf("push error does not mention %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hf_notAtoken000") {
		t.Errorf("the token leaked:\n%s", out)
	}
}

// Bad answers from a Hub fail the download with an error naming the host and path of the request
// (no query string) and what was wrong, and leave nothing in .git/lfs/objects.
func TestHubBadAnswers(t *testing.T) {
	h := startHub(t, time.Minute)
	e := hubEnv(t, h)
	e.vars = append(e.vars, "HF_TOKEN="+hubWriteToken)
	work, remote := hubRepo(t, e, h, "org/model")
	data := testutil.RandomBytes(100<<10, 5)
	writeFile(t, filepath.Join(work, "a.bin"), data)
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "a")
	e.git(work, "push", "-q", "origin", "main")
	sum := sha256.Sum256(data)
	oid := hex.EncodeToString(sum[:])

	var variant atomic.Value
	emu, _ := url.Parse(h.url)
	proxy := httputil.NewSingleHostReverseProxy(emu)
	bad := httptest.NewServer(servertest.FullDuplex(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := variant.Load().(string)
		isBatch := strings.HasSuffix(r.URL.Path, "/objects/batch")
		switch {
		case isBatch && v == "not JSON":
			w.Write([]byte("<html>maintenance</html>"))
		case isBatch && v == "no objects":
			w.Write([]byte(`{"transfer":"basic"}`))
		case isBatch && v == "other oid":
			fmt.Fprintf(w, `{"objects":[{"oid":"%s","size":%d,"actions":{"download":{"href":"http://x/"}}}]}`, strings.Repeat("b", 64), len(data))
		case isBatch && v == "other size":
			fmt.Fprintf(w, `{"objects":[{"oid":"%s","size":5,"actions":{"download":{"href":"http://x/"}}}]}`, oid)
		case isBatch && v == "object error":
			fmt.Fprintf(w, `{"objects":[{"oid":"%s","size":%d,"error":{"code":404,"message":"Object does not exist"}}]}`, oid, len(data))
		case isBatch && v == "bad bridge hash":
			fmt.Fprintf(w, `{"objects":[{"oid":"%s","size":%d,"actions":{"download":{"href":"%s/xet-bridge-us/0123/notahash?X-Amz-Signature=sig"}}}]}`, oid, len(data), h.url)
		case isBatch && v == "wrong legacy bytes":
			fmt.Fprintf(w, `{"objects":[{"oid":"%s","size":%d,"actions":{"download":{"href":"%s/cdn/x?Signature=sig"}}}]}`, oid, len(data), "http://"+r.Host)
		case r.URL.Path == "/cdn/x":
			w.Write(testutil.RandomBytes(len(data), 6))
		case strings.Contains(r.URL.Path, "-token/") && v == "token route HTML":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<!doctype html><title>Login</title>"))
		default:
			// The body goes to the emulator from memory: the emulator refuses an anonymous batch
			// before reading its body, and the proxy's transport, still sending the server's own
			// request body after the answer, once read it as the client's next request came in on
			// the same connection ("invalid concurrent Body.Read call", a panic of the test binary).
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			r2 := r.WithContext(r.Context())
			r2.Body = io.NopCloser(bytes.NewReader(b))
			proxy.ServeHTTP(w, r2)
		}
	})))
	defer bad.Close()
	badHost := strings.TrimPrefix(bad.URL, "http://")
	e.git("", "config", "--global", "lfs."+bad.URL+"/.standalonetransferagent", "xet")
	e.vars = append(e.vars, "HF_ENDPOINT="+bad.URL) // the Hugging Face token goes to the Hub alone: here the bad one

	for v, want := range map[string]string{
		"not JSON":           "not JSON",
		"no objects":         `no "objects"`,
		"other oid":          "not asked for",
		"other size":         "size 5",
		"object error":       "Object does not exist",
		"bad bridge hash":    "not a 64-hex Xet hash",
		"wrong legacy bytes": "do not match",
		"token route HTML":   "not a Xet token",
	} {
		t.Run(v, func(t *testing.T) {
			variant.Store(v)
			clone := filepath.Join(t.TempDir(), "clone")
			skip := e.cmd("", "git", "clone", "-q", remote, clone)
			skip.Env = append(skip.Env, "GIT_LFS_SKIP_SMUDGE=1")
			if out, err := skip.CombinedOutput(); err != nil {
				t.Fatalf("clone: %v\n%s", err, out)
			}
			e.git(clone, "config", "lfs.url", bad.URL+"/org/model.git/info/lfs")
			out, err := e.gitErr(clone, "lfs", "pull")
			if err == nil {
				t.Fatalf("git lfs pull succeeded against %s", v)
			}
			for _, s := range []string{want, badHost} {
				if !strings.Contains(out, s) && !(s == badHost && strings.Contains(out, strings.TrimPrefix(h.url, "http://"))) {
					t.Errorf("error does not mention %q:\n%s", s, out)
				}
			}
			if strings.Contains(out, "Signature=") || strings.Contains(out, "sig=") {
				t.Errorf("a URL query reached the output:\n%s", out)
			}
			if n := checkLFSObjects(t, clone); n != 0 {
				t.Errorf("%d objects in .git/lfs/objects after a failed download", n)
			}
		})
	}
}
