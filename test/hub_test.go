package test

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"
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

func startHub(t *testing.T, tokenTTL time.Duration) *hubServer {
	t.Helper()
	lb := &logbuf.Buffer{}
	toks, err := server.ParseHubTokens(strings.NewReader(
		hubWriteToken + ":writer:write\n" + hubReadToken + ":reader:read\n" + hubOtherToken + ":other:write:someone/else\n"))
	if err != nil {
		t.Fatal(err)
	}
	legacy := t.TempDir()
	s := startServer(t, "", func(c *server.Config) {
		c.Hub = &server.HubCompat{Tokens: toks, LegacyDir: legacy, Public: []string{"public/*"}}
		c.TokenTTL = tokenTTL
		c.Log = zerolog.New(lb)
	})
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
	writeFile(t, filepath.Join(work, "notes.bin"), testutil.RandomBytes(1024, 15838))
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
	e.git("", "clone", "-q", remote, clone)
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
