package test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/chaos"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// gc on a filesystem store while xet-server runs: a push whose shards were all refused leaves
// orphaned xorbs (small ones packed, a big one a file of its own); another version is pushed.
// gc moves the orphans to the trash (the packed ones once the server's pack writer is idle), then
// deletes them; what was pushed clones byte-identical and fsck is clean.
func TestGCFilesystem(t *testing.T) {
	needLinux(t)
	buildServer(t)
	srv := startServerProcess(t, freeAddr(t), t.TempDir())
	e := newEnv(t)
	e.install()
	refuse := func(prefix string) chaos.Rule {
		return chaos.Rule{Method: "POST", Prefix: prefix, Times: 1 << 20, Kind: chaos.Status, Code: 400, Message: "refused by the test"}
	}
	refused := chaosProxy(t, "http://"+srv.addr, refuse("/v1/shards"), refuse("/v2/shards"))
	work, remote := batchRepo(t, e, refused+"/team/gc.git/info/lfs")
	writeSmallFiles(t, work, 20, 81)
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(3<<20, 82))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "refused")
	out, err := e.gitErr(work, "push", "-q", "origin", "main")
	if err == nil {
		t.Fatalf("the push succeeded with every shard refused\n%s", out)
	}
	if n := len(xorbFiles(srv.data)); n == 0 {
		t.Fatalf("the refused push failed before any xorb reached the server (nothing for gc to find): %v\n%s", err, out)
	}
	writeSmallFiles(t, work, 20, 83) // the same paths, other bytes
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(3<<20, 84))
	writeFile(t, filepath.Join(work, ".lfsconfig"), []byte("[lfs]\n\turl = http://"+srv.addr+"/team/gc.git/info/lfs\n\tlocksverify = false\n"))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "--amend", "-m", "pushed")
	e.git(work, "push", "-q", "origin", "main")

	gc := func() (trashed, deleted, busy int, report string) {
		time.Sleep(2 * time.Second) // past the grace period
		b, err := exec.Command(filepath.Join(binDir, "xet-server"), "gc", "--grace", "1s", "--unsafe-grace", srv.data).CombinedOutput()
		if err != nil {
			t.Fatalf("gc: %v\n%s", err, b)
		}
		t.Logf("gc: %s", b)
		num := func(re string) int {
			m := regexp.MustCompile(re).FindStringSubmatch(string(b))
			if m == nil {
				t.Fatalf("gc report without %q:\n%s", re, b)
			}
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return num(`moved to trash (\d+)`), num(`deleted from trash (\d+)`), num(`left in packs in use (\d+)`), string(b)
	}
	tr1, _, busy, _ := gc()
	if tr1 < 1 || busy < 1 {
		t.Fatalf("right after the pushes: %d moved to trash (want the big orphan at least), %d left in the server's busy pack (want the small ones)", tr1, busy)
	}
	time.Sleep(10 * time.Second) // the server's pack writer goes idle and gives its pack up
	tr2, del2, busy, _ := gc()
	if busy != 0 || tr2 < 20 {
		t.Fatalf("once the server's writer is idle: %d moved to trash, %d left busy; want the 20 small orphans moved", tr2, busy)
	}
	_, del3, _, report := gc()
	if del2+del3 != tr1+tr2 || !strings.Contains(report, " 0 unreferenced") {
		t.Fatalf("%d moved to trash, %d deleted: every orphan should be gone", tr1+tr2, del2+del3)
	}
	if b, err := exec.Command(filepath.Join(binDir, "xet-server"), "fsck", srv.data).CombinedOutput(); err != nil || !strings.Contains(string(b), "no problems") {
		t.Fatalf("fsck after gc: %v\n%s", err, b)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if n := sameTree(t, work, clone); n != 23 {
		t.Fatalf("compared %d files, want 23", n)
	}
}
