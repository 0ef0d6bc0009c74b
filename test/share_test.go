package test

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

var pidField = regexp.MustCompile(`"pid":(\d+)`)

// logPIDs returns the distinct pids of the log lines holding all of subs.
func (e *env) logPIDs(subs ...string) map[int]int {
	pids := map[int]int{}
	for _, l := range e.logLines(subs...) {
		if m := pidField.FindStringSubmatch(l); m != nil {
			pid, _ := strconv.Atoi(m[1])
			pids[pid]++
		}
	}
	return pids
}

// A push of small files to a local remote: git-lfs's agent processes hand their uploads to one of
// them (agent/share), which does them all; every object is reported by the agent git-lfs gave it,
// and the clone is byte-identical. GIT_XET_SHARE=0 turns it off.
func TestSmallFilePushShared(t *testing.T) {
	needLinux(t)
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "GIT_XET_SHARE=0"}[off], func(t *testing.T) {
			e := newEnv(t)
			e.install()
			if off {
				e.vars = append(e.vars, "GIT_XET_SHARE=0")
			}
			work, remote := smallFilesRepo(t, e, 300, 71)
			e.git(work, "push", "-q", "origin", "main")
			done := e.logPIDs(`"op":"upload"`, "transfer complete")
			shared := e.logPIDs(`"op":"upload"`, "transfer complete", `"shared":true`)
			leaders := e.logPIDs("share: leading")
			total, nshared := 0, 0
			for _, n := range done {
				total += n
			}
			for _, n := range shared {
				nshared += n
			}
			if total != 300 {
				t.Fatalf("%d uploads reported complete, want 300", total)
			}
			if off {
				if nshared != 0 || len(leaders) != 0 {
					t.Fatalf("with GIT_XET_SHARE=0: %d shared uploads, leaders %v", nshared, leaders)
				}
			} else {
				if len(done) < 2 {
					t.Skipf("git-lfs ran the objects through %d agent process(es); nothing to share", len(done))
				}
				if len(leaders) != 1 {
					t.Fatalf("leaders %v, want one", leaders)
				}
				for pid := range leaders {
					if shared[pid] != 0 {
						t.Fatalf("the leader (%d) reported %d uploads as done by another process", pid, shared[pid])
					}
					if nshared+done[pid] != 300 {
						t.Fatalf("%d uploads handed over + %d the leader's own != 300 (complete per pid %v)", nshared, done[pid], done)
					}
				}
				if nshared == 0 {
					t.Fatal("no upload was handed over")
				}
			}
			clone := filepath.Join(e.home, "clone")
			e.git("", "clone", "-q", remote, clone)
			if n := sameTree(t, work, clone); n < 300 {
				t.Fatalf("compared %d files, want the 300", n)
			}
		})
	}
}

// The agent that leads the push's uploads killed with -9 half-way: its followers' requests in
// flight fail over to them (or a new leader), the push is repeated, fsck finds nothing missing and
// everything clones byte-identical.
func TestSmallFilePushLeaderKilled(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	work, remote := smallFilesRepo(t, e, 600, 73)
	push, out := startPush(t, e, work)
	storeDir := filepath.Join(remote, "xet")
	var leader int
	if !waitFor(120e9, func() bool {
		for pid := range e.logPIDs("share: leading") {
			leader = pid
		}
		return leader != 0 && len(e.logLines(`"shared":true`)) >= 20 && packedBytes(storeDir) > 100<<10
	}) {
		killPush(push)
		t.Fatalf("no leader served 20 uploads within 120 s\n%s", out.String())
	}
	syscall.Kill(leader, syscall.SIGKILL)
	before := len(e.logLines("transfer complete"))
	err := push.Wait()
	after := e.logLines("transfer complete")
	t.Logf("push after the leader's kill: %v; %d uploads complete before, %d after", err, before, len(after))
	if len(after) <= before {
		t.Errorf("no upload completed after the leader's kill: its followers did not carry on")
	}
	for _, l := range after[before:] {
		if strings.Contains(l, `"pid":`+strconv.Itoa(leader)+",") {
			t.Fatalf("the killed leader logged after its kill: %s", l)
		}
	}
	repushAndCheck(t, e, work, remote, 600)
}
