package test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
)

// With every trace on (GIT_TRACE, GIT_TRANSFER_TRACE, GIT_CURL_VERBOSE) and debug logs on both
// sides, a push and a clone leak no secret: not the password and no signed URL query anywhere, and
// no CAS token in the agent's or the server's logs.
func TestNoSecretsInTracesOrLogs(t *testing.T) {
	e := newEnv(t)
	e.install()
	const password = "s3cret-Pa55word-that-must-not-show"
	salt := "73616c74"
	sum := sha256.Sum256([]byte("salt" + password))
	lb := &logbuf.Buffer{}
	s := startServer(t, "alice:$sha256$"+salt+"$"+hex.EncodeToString(sum[:])+"\n", func(c *server.Config) {
		c.Log = zerolog.New(lb).Level(zerolog.DebugLevel)
	})
	creds := filepath.Join(e.home, ".git-credentials")
	if err := os.WriteFile(creds, []byte(strings.Replace(s.url, "http://", "http://alice:"+password+"@", 1)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.git("", "config", "--global", "credential.helper", "store --file="+creds)
	work, remote := batchRepo(t, e, s.url+"/team/secret.git/info/lfs")
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(3<<20, 7))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "a")
	e.vars = append(e.vars, "GIT_TRACE=1", "GIT_TRANSFER_TRACE=1", "GIT_CURL_VERBOSE=1")
	var all strings.Builder
	for _, args := range [][]string{{"push", "origin", "main"}, {"clone", remote, filepath.Join(e.home, "clone")}} {
		out, err := e.gitErr(work, args...)
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		all.WriteString(out)
	}
	agentLog, _ := os.ReadFile(e.log)
	// git-lfs's own traces print the batch answer's actions, whose headers carry the CAS token by
	// design (GIT_TRANSFER_TRACE shows the requests it sends the agent): not ours to hide. Ours,
	// the agent's log and the server's, show no token at all.
	checks := map[string][]string{
		"git and git-lfs output": {password, "sig="},
		"agent log":              {password, "xet1.", "sig=", "Bearer "},
		"server log":             {password, "xet1.", "sig=", "Bearer "},
	}
	texts := map[string]string{"git and git-lfs output": all.String(), "agent log": string(agentLog), "server log": lb.String()}
	if !strings.Contains(texts["git and git-lfs output"], "xet1.") {
		t.Error("no trace showed a token: the traces were not on, and this test checks nothing")
	}
	for name, text := range texts {
		for _, secret := range checks[name] {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%s shows %q: …%s…", name, secret, text[max(0, i-120):min(len(text), i+80)])
			}
		}
	}
}
