package test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// versionsOf returns n versions of a random file of size bytes, each the previous with blocks of
// blockSize bytes rewritten at edits random places (a checkpoint of a training run).
func versionsOf(n, size, edits, blockSize int, seed uint64) [][]byte {
	v := [][]byte{testutil.RandomBytes(size, seed)}
	for i := 1; i < n; i++ {
		b := append([]byte(nil), v[i-1]...)
		at := testutil.RandomBytes(8*edits, seed+uint64(1000*i))
		for k := 0; k < edits; k++ {
			off := int(binary.LittleEndian.Uint64(at[8*k:]) % uint64(size-blockSize))
			copy(b[off:], testutil.RandomBytes(blockSize, seed+uint64(1000*i+k+1)))
		}
		v = append(v, b)
	}
	return v
}

// versionsRemote is a kind of remote for the versions tests: it makes a test world with the agent
// installed and a work tree whose pushes go to the remote, and says where its Xet data is stored.
type versionsRemote struct {
	name  string
	setup func(t *testing.T) (e *env, work, remote, store string)
}

var versionsRemotes = []versionsRemote{
	{"embedded", func(t *testing.T) (*env, string, string, string) {
		e := newEnv(t)
		e.install()
		work, remote := e.localRepo(repoOpts{})
		return e, work, remote, filepath.Join(remote, "xet")
	}},
	{"server", func(t *testing.T) (*env, string, string, string) {
		e := newEnv(t)
		e.install()
		s := startServer(t, "")
		work, remote := batchRepo(t, e, s.url+"/team/versions.git/info/lfs")
		return e, work, remote, s.data
	}},
	{"hub", func(t *testing.T) (*env, string, string, string) {
		h := startHub(t, time.Hour)
		e := hubEnv(t, h)
		e.vars = append(e.vars, "HF_TOKEN="+hubWriteToken)
		work, remote := hubRepo(t, e, h, "org/versions")
		return e, work, remote, h.data
	}},
}

// pushVersions commits each version as model.bin, one commit each, and pushes after every commit
// (oneAtATime) or once at the end; it returns the bytes the remote's Xet store holds then.
func pushVersions(t *testing.T, r versionsRemote, versions [][]byte, oneAtATime bool) (e *env, remote string, stored int64) {
	e, work, remote, store := r.setup(t)
	for i, v := range versions {
		writeFile(t, filepath.Join(work, "model.bin"), v)
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", fmt.Sprintf("checkpoint %d", i+1))
		if oneAtATime {
			e.git(work, "push", "-q", "origin", "main")
		}
	}
	if !oneAtATime {
		e.git(work, "push", "-q", "origin", "main")
	}
	return e, remote, dirSize(t, store)
}

// Several versions of a file pushed at once are stored as their changed chunks, as when they are
// pushed one at a time: git-lfs gives each version to a different agent process, and they must not
// each store the whole file. A clone and a fetch of the whole history moves each chunk about once
// (not each version whole), and gets every version back byte for byte.
func TestVersionsPushedAtOnce(t *testing.T) {
	const size = 16 << 20
	versions := versionsOf(4, size, 10, 64<<10, 33)
	for _, r := range versionsRemotes {
		t.Run(r.name, func(t *testing.T) {
			e1, _, one := pushVersions(t, r, versions, true)
			e, remote, all := pushVersions(t, r, versions, false)
			t.Logf("%d versions of %d bytes: stored %d bytes pushed one at a time, %d pushed at once (%.2fx)",
				len(versions), size, one, all, float64(all)/float64(one))
			if all > one+one/10 {
				t.Errorf("pushed at once the store holds %d bytes, want at most 1.1x the %d of one-at-a-time pushes", all, one)
			}
			sentOne, sentAll := e1.uploadedNew(), e.uploadedNew()
			t.Logf("new bytes the uploads sent: %d one at a time, %d at once (%.2fx)", sentOne, sentAll, float64(sentAll)/float64(sentOne))
			if sentAll > sentOne+sentOne*15/100 {
				t.Errorf("pushed at once the uploads sent %d new bytes, want at most 1.15x the %d of one-at-a-time pushes", sentAll, sentOne)
			}
			clone := filepath.Join(e.home, "clone")
			e.git("", "clone", "-q", remote, clone)
			e.git(clone, "lfs", "fetch", "--all", "origin")
			var fetched int64
			for _, v := range versions {
				fetched += e.downloadOf(oidOf(v)).NewBytes
			}
			total := int64(len(versions) * size)
			t.Logf("clone + git lfs fetch --all fetched %d bytes of %d (%.2fx what plain git-lfs moves, %.2fx what the remote stores)",
				fetched, total, float64(fetched)/float64(total), float64(fetched)/float64(all))
			if fetched > all+all/10 {
				t.Errorf("clone + git lfs fetch --all fetched %d bytes, want at most 1.1x the %d the remote stores: each chunk once", fetched, all)
			}
			for i := range versions {
				if got := checkoutVersion(t, e, clone, len(versions)-1-i); string(got) != string(versions[i]) {
					t.Fatalf("checkpoint %d does not come back byte for byte", i+1)
				}
			}
		})
	}
}

// checkoutVersion checks out main~back and returns its model.bin.
func checkoutVersion(t *testing.T, e *env, clone string, back int) []byte {
	t.Helper()
	e.git(clone, "checkout", "-q", fmt.Sprintf("main~%d", back))
	b, err := os.ReadFile(filepath.Join(clone, "model.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// uploadedNew is the sum of the new bytes (sent to the CAS, not deduplicated) of every upload the
// agents logged.
func (e *env) uploadedNew() int64 {
	var n int64
	for _, l := range e.logLines(`"op":"upload"`, "transfer complete") {
		n += parseTransfer(e.t, l).NewBytes
	}
	return n
}

// leaderPID is the agent process that last logged that it leads a group, 0 when none did.
func (e *env) leaderPID() int {
	pid := 0
	for _, l := range e.logLines("share: leading") {
		var v struct{ Pid int }
		if json.Unmarshal([]byte(l), &v) == nil && v.Pid != 0 {
			pid = v.Pid
		}
	}
	return pid
}

// The agent process doing a multi-version push (the leader, which all the versions' uploads go
// through) is killed with -9 while it stores them: the push fails, and pushing again completes it
// with fsck clean and every version cloned back.
func TestVersionsPushLeaderKilled(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	work, remote := e.localRepo(repoOpts{})
	versions := versionsOf(4, 48<<20, 10, 64<<10, 35)
	for i, v := range versions {
		writeFile(t, filepath.Join(work, "model.bin"), v)
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", fmt.Sprintf("checkpoint %d", i+1))
	}
	push, out := startPush(t, e, work)
	storeDir := filepath.Join(remote, "xet")
	if !testutil.Eventually(120*time.Second, func() bool { return len(xorbFiles(storeDir)) > 0 && e.leaderPID() != 0 }) {
		killPush(push)
		t.Fatalf("no xorb stored and no leader within 120 s\n%s", out.String())
	}
	pid := e.leaderPID()
	if err := killProcess(pid); err != nil {
		killPush(push)
		t.Fatalf("killing the leader %d: %v", pid, err)
	}
	if err := push.Wait(); err == nil {
		t.Fatalf("the push succeeded although its leader was killed mid-way\n%s", out.String())
	}
	t.Logf("leader %d killed; the push failed as it must", pid)

	e.git(work, "push", "-q", "origin", "main")
	fsck := e.cmd(work, filepath.Join(binDir, "git-xet-transfer"), "fsck")
	if b, err := fsck.CombinedOutput(); err != nil || !strings.Contains(string(b), "no problems") {
		t.Errorf("git-xet-transfer fsck after the kill and the second push: %v\n%s", err, b)
	}
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	e.git(clone, "lfs", "fetch", "--all", "origin")
	for i := range versions {
		if got := checkoutVersion(t, e, clone, len(versions)-1-i); string(got) != string(versions[i]) {
			t.Fatalf("checkpoint %d does not come back byte for byte", i+1)
		}
	}
}
