package test

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
)

// With authentication on and CAS tokens that live one second, every CAS call the agent makes needs a
// refreshed token: it gets them from the action's href with the action's refresh credential, so a
// push and a clone that outlive their first token still succeed without asking the user again.
func TestBatchTokenRefreshWithAuth(t *testing.T) {
	e := newEnv(t)
	e.install()
	sum := sha256.Sum256([]byte("salt" + "pw-alice"))
	s := startServer(t, "alice:$sha256$73616c74$"+hex.EncodeToString(sum[:])+"\n",
		func(c *server.Config) { c.TokenTTL = time.Second })
	lfsURL := strings.Replace(s.url, "http://", "http://alice:pw-alice@", 1) + "/team/repo.git/info/lfs"
	work, remote := batchRepo(t, e, lfsURL)
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(12<<20, 71))
	writeFile(t, filepath.Join(work, "b.bin"), testutil.RandomBytes(3<<20, 72))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	time.Sleep(1100 * time.Millisecond) // nothing may rely on the batch answer's token still being valid
	e.git(work, "push", "-q", "origin", "main")
	if n := len(e.logLines(`"op":"upload"`, `"mode":"batch"`, "transfer complete")); n != 2 {
		t.Fatalf("%d uploads through xet, want 2", n)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	if n := len(e.logLines(`"op":"download"`, `"mode":"batch"`, "transfer complete")); n != 2 {
		t.Fatalf("%d downloads through xet, want 2", n)
	}
}
