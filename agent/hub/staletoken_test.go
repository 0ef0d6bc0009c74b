package hub

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// staleHelperClient is a Client whose credential comes from a git credential helper holding a
// stale token: it answers old-token until git erases it (git credential reject), then new-token,
// the one the server takes (as after a token rotation, the user's keychain answering the new one
// or git prompting for it). The helper logs each action it is asked for.
func staleHelperClient(t *testing.T, h http.HandlerFunc) (*Client, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(home, "none"))
	t.Setenv("HF_ENDPOINT", "")
	logf := filepath.Join(home, "helper.log")
	rotated := filepath.Join(home, "rotated")
	script := filepath.Join(home, "helper")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat > /dev/null\necho \"$1\" >> "+logf+"\n"+
		"case \"$1\" in\nget) if [ -e "+rotated+" ]; then t=new-token; else t=old-token; fi; printf 'username=u\\npassword=%s\\n' $t;;\n"+
		"erase) touch "+rotated+";;\nesac\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "credential.helper", script}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	t.Chdir(repo) // git credential runs where the agent runs: in the repository
	lfs := srv.URL + "/team/models.git/info/lfs"
	creds, err := credentials.NewForURL(context.Background(), gitrepo.New(gitrepo.Git{Dir: repo}), credentials.EnvFrom(os.Environ()), lfs, "upload")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(lfs, creds, srv.Client(), "test")
	if err != nil {
		t.Fatal(err)
	}
	return c, logf
}

// A credential a helper keeps after it went stale (a rotated token) is rejected at the first 401,
// and git credential is asked again for the same request, as git-lfs asks it (up to three
// attempts): the helper's next answer (the keychain's new entry, a prompt) carries the transfer.
// The agent failed the request and left the retry to the next one, so a push failed once per
// rotation.
func TestStaleHelperCredentialIsReplacedAtOnce(t *testing.T) {
	good := "Basic " + base64.StdEncoding.EncodeToString([]byte("u:new-token"))
	var mu sync.Mutex
	var seen []string
	c, logf := staleHelperClient(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != good {
			w.Header().Set("WWW-Authenticate", `Basic realm="lfs"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
		_, _ = w.Write([]byte(`{"transfer":"basic","objects":[{"oid":"` + oid + `","size":1}]}`))
	})
	if _, err := c.Batch(context.Background(), "upload", []string{"basic"}, "", []lfsbatch.Object{{OID: oid, Size: 1}}); err != nil {
		t.Fatalf("the batch failed with a stale helper credential: %v", err)
	}
	if len(seen) != 2 || seen[1] != good {
		t.Errorf("the server saw %d requests, want the stale credential's, then the new one's", len(seen))
	}
	b, _ := os.ReadFile(logf)
	if got := strings.Join(strings.Fields(string(b)), " "); got != "get erase get store" {
		t.Errorf("the helper was asked %q, want get, erase (reject), get, store (approve)", got)
	}
}

// A helper that has nothing better than the refused credential is not asked without end: after
// git-lfs's three attempts the request fails with the server's 401.
func TestRefusedHelperCredentialIsAskedThreeTimesAtMost(t *testing.T) {
	n := 0
	c, logf := staleHelperClient(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		w.WriteHeader(http.StatusUnauthorized)
	})
	_, err := c.Batch(context.Background(), "upload", []string{"basic"}, "", []lfsbatch.Object{{OID: oid, Size: 1}})
	wantErr(t, err, "401")
	if n > 3 {
		t.Errorf("%d requests for one refused batch, want at most 3", n)
	}
	b, _ := os.ReadFile(logf)
	if gets := strings.Count(string(b), "get"); gets > 3 {
		t.Errorf("the helper was asked %d times", gets)
	}
}
