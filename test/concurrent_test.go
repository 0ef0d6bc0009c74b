package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// 4 pushes of overlapping content at once to one remote, 8 rounds (XET_CONCURRENT_ROUNDS; 20 in
// test/concurrent-push.sh, whose figures are the rounds' time: at 20 the test took 231 s of a CI
// run on a slow machine, the rounds 212 s of it), for the embedded store and
// for xet-server: each round every pusher adds a version sharing most of its bytes with the
// others' (the same base with its own edit), a file identical in all four (one object pushed four
// times at once), and bytes of its own. Every push succeeds; every version of every pusher's
// branch clones byte-identical; the store checks clean.
func TestConcurrentOverlappingPushes(t *testing.T) {
	needLinux(t)
	for _, kind := range []string{"embedded", "server"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			e.install()
			remote := filepath.Join(e.home, "remote.git")
			e.bareRemote(remote)
			storeDir := filepath.Join(remote, "xet")
			lfsURL := ""
			if kind == "server" {
				srv := startServer(t, "")
				lfsURL, storeDir = srv.url+"/team/many.git/info/lfs", srv.data
			}
			works := make([]string, 4)
			for i := range works {
				works[i] = filepath.Join(e.home, fmt.Sprintf("w%d", i))
				e.workTree(works[i], remote, repoOpts{lfsURL: lfsURL})
			}
			start := time.Now()
			rounds := concurrentRounds(t)
			for round := range rounds {
				pushRound(t, e, works, round)
			}
			// Printed, never asserted: test/concurrent-push.sh reads both kinds' figures from one
			// run and prints their ratio.
			t.Logf("push rounds: %s %.2f s", kind, time.Since(start).Seconds())
			for i, w := range works {
				clone := filepath.Join(e.home, fmt.Sprintf("clone%d", i))
				e.git("", "clone", "-q", "-b", fmt.Sprintf("b%d", i), remote, clone)
				if n := sameTree(t, w, clone); n < 3*rounds {
					t.Fatalf("branch b%d: compared %d files, want the %d of %d versions", i, n, 3*rounds, rounds)
				}
			}
			checkStore(t, storeDir)
		})
	}
}

// concurrentRounds is XET_CONCURRENT_ROUNDS, else 8.
func concurrentRounds(t *testing.T) int {
	v := os.Getenv("XET_CONCURRENT_ROUNDS")
	if v == "" {
		return 8
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("XET_CONCURRENT_ROUNDS=%q: want a count of rounds", v)
	}
	return n
}

// pushRound writes round r's version in each work tree, commits it, and pushes all four at once.
func pushRound(t *testing.T, e *env, works []string, r int) {
	t.Helper()
	base := testutil.RandomBytes(2<<20, uint64(500+r%3)) // rounds share bases too
	common := testutil.RandomBytes(64<<10, uint64(600+r))
	for i, w := range works {
		v := append([]byte(nil), base...)
		copy(v[(i+1)*300<<10:], testutil.RandomBytes(64<<10, uint64(700+10*r+i)))
		dir := filepath.Join(w, fmt.Sprintf("r%02d", r))
		writeFile(t, filepath.Join(dir, "shared.bin"), v)
		writeFile(t, filepath.Join(dir, "common.bin"), common)
		writeFile(t, filepath.Join(dir, "own.bin"), testutil.RandomBytes(512<<10, uint64(800+10*r+i)))
		e.git(w, "add", ".")
		e.git(w, "commit", "-q", "-m", fmt.Sprint(r))
	}
	errs := make(chan error, len(works))
	for i, w := range works {
		go func() {
			out, err := e.cmd(w, "git", "push", "-q", "origin", fmt.Sprintf("main:b%d", i)).CombinedOutput()
			if err != nil {
				err = fmt.Errorf("round %d, pusher %d: %v\n%s", r, i, err, out)
			}
			errs <- err
		}()
	}
	var failed []string
	for range works {
		if err := <-errs; err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		t.Fatal(strings.Join(failed, "\n"))
	}
}
