//go:build linux

package test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// An agent waiting for a credential helper (a prompt, a keyring) ends within stopWithin of SIGTERM,
// sent to the agents alone, as a service manager or a tool killing stray processes does, and so do
// the `git credential fill` it started and the helper git started: git-lfs's helpers take no
// context. The agent first waited for the helper to end, 28 s with one that slept 30; then it ended
// at once and left both running, orphaned, until the helper's sleep was over. (Ctrl-C reaches the
// helper too, in the same process group.)
func TestSIGTERMDuringSlowCredentialHelper(t *testing.T) {
	e, work := helperRepo(t, func(home string) string {
		asked := filepath.Join(home, "helper-asked") // each run of the helper: its pid and git's
		return "cat > /dev/null\necho $$ $PPID >> " + asked + "\nexec sleep 30\n"
	})
	asked := filepath.Join(e.home, "helper-asked")

	push := startInGroup(t, e, work, "git", "push", "-q", "origin", "main")
	if !testutil.Eventually(time.Minute, func() bool {
		_, err := os.Stat(asked)
		return err == nil && len(groupAgents(push.pgid())) > 0
	}) {
		t.Fatalf("the agent did not ask the credential helper within a minute\n%s", push.out)
	}
	agents := groupAgents(push.pgid())
	sent := time.Now()
	for _, pid := range agents {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	gone := testutil.Eventually(stopWithin+3*time.Second, func() bool { return len(groupAgents(push.pgid())) == 0 })
	if took := time.Since(sent); !gone || took > stopWithin {
		t.Fatalf("%d agent processes (of %d) still ran %v after SIGTERM while the credential helper waited (want none after %v)",
			len(groupAgents(push.pgid())), len(agents), took, stopWithin)
	}
	b, err := os.ReadFile(asked)
	if err != nil {
		t.Fatal(err)
	}
	var helpers []int // the helpers' sleeps and the `git credential` processes that ran them
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("the helper wrote %q", b)
		}
		helpers = append(helpers, pid)
	}
	alive := func() []int {
		return processes(func(pid int, stat []string) bool { return slices.Contains(helpers, pid) && stat[0] != "Z" })
	}
	if !testutil.Eventually(stopWithin, func() bool { return len(alive()) == 0 }) {
		t.Fatalf("the credential helper and git credential (%v) outlived the agents: %v still ran %v after SIGTERM",
			helpers, alive(), time.Since(sent))
	}
}

// helperRepo is a Hub repository (the emulator, no HF_TOKEN, no token file, no netrc: git
// credential is asked) with a 2 MiB file committed to push, whose credential helper is the shell
// script body (given the world's home).
func helperRepo(t *testing.T, body func(home string) string) (*env, string) {
	t.Helper()
	h := startHub(t, time.Minute)
	e := hubEnv(t, h)
	work, _ := hubRepo(t, e, h, "org/model")
	helper := filepath.Join(e.home, "helper")
	writeFile(t, helper, []byte("#!/bin/sh\n"+body(e.home)))
	if err := os.Chmod(helper, 0o755); err != nil {
		t.Fatal(err)
	}
	e.git(work, "config", "credential.helper", helper)
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(2<<20, 45))
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "a")
	return e, work
}
