package test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/chaos"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// gc on a filesystem store while xet-server runs: a push whose shards were all refused leaves
// orphaned xorbs (small ones packed, a big one a file of its own); another version is pushed.
// gc moves the orphans to the trash (the packed ones once the server's pack writer is idle), then
// deletes them; what was pushed clones byte-identical and fsck is clean.
func TestGCFilesystem(t *testing.T) {
	needLinux(t)
	buildServer(t)
	srv := startServerProcess(t, servertest.FreeAddr(t), t.TempDir())
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

// fillGarbage writes n xorbs of size random bytes no file names to the store in dir (packed when
// small), and one file that names its own xorb, then ages every blob by two days: what
// `--gc-every` with the default grace finds to move.
func fillGarbage(t *testing.T, dir string, n, size int) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		x := testutil.RandomXorb(size, uint64(1000+i))
		if _, err := st.PutXorbBytes(ctx, x.Hash, x.Body); err != nil {
			t.Fatal(err)
		}
	}
	kept := testutil.NewOneXorbFile([][]byte{testutil.RandomBytes(3000, 1), testutil.RandomBytes(2000, 2)})
	if _, err := st.PutXorbBytes(ctx, kept.Xorb, kept.Body); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutShard(ctx, "team/gc", kept.Shard); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			os.Chtimes(p, old, old)
		}
		return nil
	})
}

// xet-server stopped with SIGTERM while its own gc (--gc-every) is rewriting a pack of garbage:
// gc stops at its next batch, the server joins it before closing the store, and exits 0 within
// --shutdown-timeout; the store checks clean, and the next gc moves every orphan.
func TestSIGTERMDuringGC(t *testing.T) {
	needLinux(t)
	buildServer(t)
	data := t.TempDir()
	const orphans = 2000 // of 100 kB: 200 MB in one pack, rewritten in 64 MiB batches
	fillGarbage(t, filepath.Join(data, "cas"), orphans, 100_000)
	logFile := filepath.Join(t.TempDir(), "server.log")
	const timeout = 5 * time.Second
	s := startServerProcess(t, servertest.FreeAddr(t), data, "--log-level", "info", "--log-file", logFile,
		"--gc-every", "50ms", "--shutdown-timeout", timeout.String())
	logged := func(what string) bool {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), what)
	}
	if !testutil.Eventually(60*time.Second, func() bool { return logged("gc: moving and deleting") }) {
		b, _ := os.ReadFile(logFile)
		t.Fatalf("gc did not start moving\n%s", b)
	}
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := s.cmd.Wait()
	took := time.Since(start)
	b, _ := os.ReadFile(logFile)
	if err != nil || took > timeout {
		t.Fatalf("xet-server after SIGTERM during gc: %v after %v (--shutdown-timeout %v)\n%s%s", err, took, timeout, b, s.log.String())
	}
	t.Logf("SIGTERM during gc: xet-server exited in %v", took.Round(time.Millisecond))
	if !logged("gc stopped: the server is shutting down") || logged("gc done") {
		t.Fatalf("gc was not stopped mid-way by the SIGTERM\n%s", b)
	}
	if i, j := strings.Index(string(b), "gc stopped"), strings.Index(string(b), "xet-server stopped"); j < 0 || i > j {
		t.Fatalf("the server did not stop after its gc\n%s", b)
	}
	fsckServer(t, data)
	out, err := exec.Command(filepath.Join(binDir, "xet-server"), "gc", data).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d xorbs, 1 referenced", orphans+1)) {
		t.Fatalf("gc after the interrupted one: %v\n%s", err, out)
	}
	t.Logf("the next gc: %s", out)
	fsckServer(t, data)
}
