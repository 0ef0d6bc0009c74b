//go:build linux

package test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// An agent waiting for a credential helper (a prompt, a keyring) ends within stopWithin of SIGTERM,
// sent to the agents alone, as a service manager or a tool killing stray processes does: git-lfs's
// helpers take no context, and the agent waited for the helper to end, 28 s with one that slept
// 30. (Ctrl-C reaches the helper too, in the same process group.)
func TestSIGTERMDuringSlowCredentialHelper(t *testing.T) {
	h := startHub(t, time.Minute)
	e := hubEnv(t, h) // no HF_TOKEN, no token file, no netrc: git credential is asked
	work, _ := hubRepo(t, e, h, "org/model")
	asked := filepath.Join(e.home, "helper-asked")
	helper := filepath.Join(e.home, "slow-helper")
	writeFile(t, helper, []byte("#!/bin/sh\ncat > /dev/null\ntouch "+asked+"\nexec sleep 30\n"))
	if err := os.Chmod(helper, 0o755); err != nil {
		t.Fatal(err)
	}
	e.git(work, "config", "credential.helper", helper)
	writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(2<<20, 45))
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "a")

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
}
