//go:build linux || darwin

package proctree

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// startTree starts `sh -c script` whose first line of output is the pid of a grandchild, and
// waits for that line. The shell is waited for on a goroutine, as git-lfs's helpers are by the
// goroutine that no longer waits for their answer.
func startTree(t *testing.T, script string) (child, grandchild int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-waited
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the grandchild's pid: %v", err)
	}
	grandchild, err = strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killIfOurs(grandchild) })
	return cmd.Process.Pid, grandchild
}

// killIfOurs kills a grandchild a failed test left running.
func killIfOurs(pid int) {
	if running(pid) {
		exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
	}
}

// A helper left waiting (here a shell and the sleep it started) ends when its process stops:
// both the child and the grandchild, which would otherwise outlive the process, orphaned.
func TestStopEndsChildrenAndTheirChildren(t *testing.T) {
	child, grandchild := startTree(t, "sleep 60 & echo $!; wait")
	if n := Stop(time.Second); n != 2 {
		t.Fatalf("Stop signalled %d processes, want 2 (the shell %d and its sleep %d)", n, child, grandchild)
	}
	if !testutil.Eventually(time.Second, func() bool { return !running(child) && !running(grandchild) }) {
		t.Fatalf("after Stop: the shell running %v, its sleep running %v", running(child), running(grandchild))
	}
	if n := Stop(time.Second); n != 0 {
		t.Fatalf("a second Stop found %d processes to signal, want none", n)
	}
}

// A helper that ignores SIGTERM is killed once the grace period is over.
func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	// An ignored signal stays ignored across exec: the sleep ignores SIGTERM too.
	child, grandchild := startTree(t, "trap '' TERM; sleep 60 & echo $!; wait; wait")
	start := time.Now()
	Stop(100 * time.Millisecond)
	if !testutil.Eventually(time.Second, func() bool { return !running(child) && !running(grandchild) }) {
		t.Fatalf("%v after Stop with 100 ms of grace: the shell running %v, its sleep running %v",
			time.Since(start), running(child), running(grandchild))
	}
}

func TestDescendantsParentsFirstAndNoOthers(t *testing.T) {
	procs := []proc{{1, 0}, {10, 1}, {11, 10}, {12, 10}, {13, 11}, {20, 1}, {21, 20}, {30, 31}, {31, 30}}
	got := descendants(10, procs)
	want := []int{11, 12, 13}
	if len(got) != len(want) {
		t.Fatalf("descendants(10) = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("descendants(10) = %v, want %v", got, want)
		}
	}
	// A table read while pids are reused can name a cycle: it ends, each pid once.
	if got := descendants(30, procs); len(got) != 1 || got[0] != 31 {
		t.Fatalf("descendants(30) in a cycle = %v, want [31]", got)
	}
}
