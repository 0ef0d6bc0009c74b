package test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// startUsersServer starts the xet-server binary with a users file of alice (alice/*) and bob
// (bob/*), and its metrics on a port of their own; it returns the server and the metrics URL.
func startUsersServer(t *testing.T, extra ...string) (*xetServerProcess, string) {
	t.Helper()
	buildServer(t)
	users := filepath.Join(t.TempDir(), "users")
	writeFile(t, users, []byte(servertest.UserLine("alice", "pw-alice", ":write:"+"alice/*")+servertest.UserLine("bob", "pw-bob", ":write:"+"bob/*")))
	metrics := servertest.FreeAddr(t)
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), append([]string{"--users", users, "--metrics-listen", metrics}, extra...)...)
	return s, "http://" + metrics + "/metrics"
}

// metric reads one unlabelled value of the server's metrics ("" when absent).
func metric(url, name string) string {
	res, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return ""
}

// slowWriters runs test/slowwriters against repo as user:pw: n xorb uploads trickling at rate
// bytes per second. It is stopped when the test ends.
type slowWriters struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	open map[string]bool
	ends []string
	done chan struct{}
}

func startSlowWriters(t *testing.T, lfsURL string, n, rate int) *slowWriters {
	t.Helper()
	bin := buildTool(t, "slowwriters", "./slowwriters")
	w := &slowWriters{open: map[string]bool{}, done: make(chan struct{})}
	w.cmd = exec.Command(bin, "-lfs", lfsURL, "-n", fmt.Sprint(n), "-rate", fmt.Sprint(rate))
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.cmd.Stderr = os.Stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { // ends with the process's stdout; the cleanup below waits for it
		defer close(w.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			w.mu.Lock()
			switch {
			case len(f) >= 2 && f[0] == "open":
				w.open[f[1]] = true
			case len(f) >= 2 && f[0] == "ended":
				delete(w.open, f[1])
				w.ends = append(w.ends, sc.Text())
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.cmd.Process.Signal(os.Interrupt)
		<-w.done
		w.cmd.Wait()
	})
	return w
}

// state is how many writers are open, and the lines of those that ended.
func (w *slowWriters) state() (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.open), append([]string(nil), w.ends...)
}

// Issue 41, item 3: Alice, who may write to her own repository, holds every xorb upload slot of the
// server with eight uploads trickling at 17 KB/s (above the minimum body rate). Bob's push of a
// 10 MB file to his own repository still completes, while Alice's uploads are still open: she
// keeps at most half of the slots while he waits. (Before, Bob waited until her uploads ended.)
func TestSlowWritersDoNotStopOthersPushes(t *testing.T) {
	needLinux(t)
	s, metrics := startUsersServer(t)
	alice := startSlowWriters(t, "http://alice:pw-alice@"+s.addr+"/alice/r.git/info/lfs", 8, 17000)
	if !testutil.Eventually(30*time.Second, func() bool { return metric(metrics, "xet_upload_slots_in_use") == "8" }) {
		n, ends := alice.state()
		t.Fatalf("Alice's 8 uploads never held the 8 slots (%d open, slots in use %q): %v", n, metric(metrics, "xet_upload_slots_in_use"), ends)
	}

	e := newEnv(t)
	e.install()
	work, _ := batchRepo(t, e, "http://bob:pw-bob@"+s.addr+"/bob/r.git/info/lfs")
	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(10e6, 41))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "big")
	push, out := startPush(t, e, work)
	pushed := make(chan error, 1)
	go func() { pushed <- push.Wait() }()
	select {
	case err := <-pushed:
		if err != nil {
			t.Fatalf("Bob's push: %v\n%s", err, out)
		}
	case <-time.After(90 * time.Second):
		killPush(push)
		<-pushed
		n, ends := alice.state()
		t.Fatalf("Bob's push did not complete within 90 s while Alice's %d slow uploads were open (ended: %v)\n%s", n, ends, out)
	}
	n, ends := alice.state()
	t.Logf("Bob's push done; Alice's uploads: %d open, ended: %v", n, ends)
	if n < 4 {
		t.Errorf("%d of Alice's uploads still open when Bob's push completed, want at least 4 (her half of the slots): %v", n, ends)
	}
}

// Issue 41, item 6, against the server binary: xorbs sent chunked (no Content-Length) that no
// shard registers count against the repository's quota as they arrive; the one that would pass
// 3 MiB is refused with 507 and not stored (before, a chunked body counted nothing).
func TestQuotaCountsChunkedUnregisteredXorbs(t *testing.T) {
	buildServer(t)
	users := filepath.Join(t.TempDir(), "users")
	writeFile(t, users, []byte(servertest.UserLine("alice", "pw-alice", ":write:"+"alice/*")))
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--users", users, "--repo-quota", "3MiB")
	tok := servertest.CASToken(servertest.XetAction(t, "http://alice:pw-alice@"+s.addr+"/alice/r.git/info/lfs", "upload",
		lfsbatch.Object{OID: strings.Repeat("ab", 32), Size: 1}))
	for i := range 4 {
		b := xorb.NewBuilder(xorb.PolicyNone)
		for c := range 10 {
			chunk := testutil.RandomBytes(100_000, uint64(100*i+c))
			b.Add(chunk, hash.Chunk(chunk))
		}
		x := b.Finish()
		req, _ := http.NewRequest("POST", "http://"+s.addr+"/v1/xorbs/default/"+x.Hash.String(), io.MultiReader(bytes.NewReader(x.Body)))
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := http.StatusOK
		if i == 3 {
			want = http.StatusInsufficientStorage
		}
		if res.StatusCode != want {
			t.Fatalf("chunked xorb %d of 1 MB, none registered, quota 3 MiB: %d %s, want %d", i, res.StatusCode, msg, want)
		}
	}
}
