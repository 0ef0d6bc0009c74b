package proctree

import (
	"os"
	"os/exec"
	"testing"
)

func TestStatOfThisProcess(t *testing.T) {
	state, ppid, ok := stat(os.Getpid())
	if !ok || ppid != os.Getppid() || state == 'Z' {
		t.Fatalf("stat(self) = %q, %d, %v; want a running state and ppid %d", state, ppid, ok, os.Getppid())
	}
	if _, _, ok := stat(-1); ok {
		t.Fatal("stat(-1) read a process")
	}
}

// A command name may hold spaces and parentheses (a program can name itself anything): the fields
// are read after the last ')'.
func TestParseStatWithParenthesesInTheName(t *testing.T) {
	state, ppid, ok := parseStat([]byte("4242 (evil) S 1 (x) y) S 77 4242 4242 0 -1 4194560\n"))
	if !ok || state != 'S' || ppid != 77 {
		t.Fatalf("parseStat = %q, %d, %v; want 'S', 77, true", state, ppid, ok)
	}
	for _, bad := range []string{"", "4242 (x", "4242 (x) ", "4242 (x) SS 77", "4242 (x) S notapid"} {
		if _, _, ok := parseStat([]byte(bad)); ok {
			t.Fatalf("parseStat(%q) read a process", bad)
		}
	}
}

// A process without children reads only its threads' lists of children, not the process table
// (a few reads where the table is hundreds: every agent runs Stop at its exit); one with a child
// reads the table.
func TestChildrenListedBeforeTheTable(t *testing.T) {
	if mayHaveChildren() {
		t.Fatal("a test process with no child says it may have one")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if !mayHaveChildren() {
		t.Fatal("a process with a child says it has none")
	}
}
