package test

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
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

var forField = regexp.MustCompile(`"for":(\d+)`)

// A push of small files to a local remote: git-lfs's agent processes hand their conversations to
// one of them (agent/share), which does every upload, answering each on the pipes of the process
// git-lfs gave it to; the others exit cleanly, and the clone is byte-identical. GIT_XET_SHARE=0
// turns it off.
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
			leaders := e.logPIDs("share: leading")
			handed := e.logPIDs("share: the conversation is handed to the leader")
			total := 0
			for _, n := range done {
				total += n
			}
			if total != 300 {
				t.Fatalf("%d uploads reported complete, want 300", total)
			}
			served := map[string]int{} // follower pid -> uploads the leader did for it
			for _, l := range e.logLines(`"op":"upload"`, "transfer complete") {
				if m := forField.FindStringSubmatch(l); m != nil {
					served[m[1]]++
				}
			}
			if off {
				if len(leaders) != 0 || len(handed) != 0 || len(served) != 0 {
					t.Fatalf("with GIT_XET_SHARE=0: leaders %v, hand-offs %v, served %v", leaders, handed, served)
				}
			} else {
				if len(handed) == 0 {
					t.Skip("git-lfs started one agent process; nothing to hand off")
				}
				// (Another process may lead after the first ends, with nothing left to do.)
				if len(done) != 1 {
					t.Fatalf("uploads done by %v: want one process doing all", done)
				}
				for pid := range done {
					if leaders[pid] == 0 {
						t.Fatalf("the process that did the uploads (%d) is not a leader (%v)", pid, leaders)
					}
				}
				if len(served) != len(handed) {
					t.Fatalf("the leader served uploads for %d processes, %d handed their conversations (%v, %v)", len(served), len(handed), served, handed)
				}
				for pid := range handed {
					if served[strconv.Itoa(pid)] == 0 {
						t.Fatalf("process %d handed its conversation off; the leader did none of its uploads (%v)", pid, served)
					}
				}
				if errs := e.logLines(`"level":"error"`); len(errs) > 0 {
					t.Fatalf("errors logged: %v", errs)
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

// The agent that leads the push killed with -9 half-way: the processes that had handed it their
// conversations cannot know which request it was doing, so they exit with an error and git-lfs
// fails the push (it does not hang); the push is repeated, fsck finds nothing missing and
// everything clones byte-identical.
func TestSmallFilePushLeaderKilled(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	work, remote := smallFilesRepo(t, e, 600, 73)
	push, out := startPush(t, e, work)
	storeDir := filepath.Join(remote, "xet")
	var leader int
	if !testutil.Eventually(120e9, func() bool {
		for pid := range e.logPIDs("share: leading") {
			leader = pid
		}
		return leader != 0 && len(e.logLines(`"for":`)) >= 20 && packedBytes(storeDir) > 100<<10
	}) {
		killPush(push)
		t.Fatalf("no leader served 20 uploads within 120 s\n%s", out.String())
	}
	killProcess(leader)
	ended := make(chan error, 1)
	go func() { ended <- push.Wait() }()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatalf("the push succeeded after its leader was killed half-way\n%s", out.String())
		}
	case <-time.After(2 * time.Minute):
		killPush(push)
		t.Fatalf("the push hung after its leader was killed\n%s", out.String())
	}
	if gone := e.logLines("run the push again"); len(gone) == 0 {
		t.Errorf("no follower reported that its leader ended\n%s", out.String())
	}
	repushAndCheck(t, e, work, remote, 600)
}
