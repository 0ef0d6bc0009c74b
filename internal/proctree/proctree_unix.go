//go:build linux || darwin

package proctree

import (
	"os"
	"syscall"
	"time"
)

// The process table comes from the system's own files: snapshot, running and mayHaveChildren
// (proctree_linux.go: /proc; proctree_darwin.go: sysctl kern.proc).

func stop(grace time.Duration) int {
	if !mayHaveChildren() {
		return 0
	}
	pids := descendants(os.Getpid(), snapshot())
	if len(pids) == 0 {
		return 0
	}
	// The whole tree is signalled from one snapshot: a helper's parent that ends first would
	// otherwise leave the helper to init, out of reach of a second look.
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		left := pids[:0:0]
		for _, pid := range pids {
			if running(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			break
		}
		time.Sleep(wait)
	}
	return len(pids)
}

// proc is one line of the process table: a process and its parent.
type proc struct{ pid, ppid int }

// descendants returns the processes of procs descended from root, each parent before its children.
func descendants(root int, procs []proc) []int {
	children := make(map[int][]int)
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var out []int
	seen := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range children[parent] {
			if !seen[c] { // a table read while processes come and go can hold a cycle of reused pids
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}
