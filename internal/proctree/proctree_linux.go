package proctree

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

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

// mayHaveChildren reports whether a thread of this process has a child, from the kernel's list of
// each thread's children: a few small reads where the whole process table would be hundreds (the
// common case at an agent's exit is no child at all). Where the kernel keeps no such list
// (CONFIG_PROC_CHILDREN), it says yes and the table is read.
func mayHaveChildren() bool {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return true
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			if _, serr := os.Stat("/proc/self/task/" + t.Name()); serr != nil {
				continue // the thread ended meanwhile
			}
			return true // the thread is there and its list is not: read the table
		}
		if len(bytes.TrimSpace(b)) > 0 {
			return true
		}
	}
	return false
}

// proc is one line of the process table: a process and its parent.
type proc struct{ pid, ppid int }

// snapshot reads the process table from /proc, leaving out zombies (they run nothing, and their
// children already belong to another parent). What cannot be read is left out.
func snapshot() []proc {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer dir.Close()
	names, _ := dir.Readdirnames(-1)
	var procs []proc
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		state, ppid, ok := stat(pid)
		if ok && state != 'Z' && state != 'X' {
			procs = append(procs, proc{pid, ppid})
		}
	}
	return procs
}

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

// running reports whether pid is a process that has not ended (a zombie has).
func running(pid int) bool {
	state, _, ok := stat(pid)
	return ok && state != 'Z' && state != 'X'
}

// stat reads a process's state and parent from /proc/PID/stat.
func stat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	return parseStat(b)
}

// parseStat reads the state and the parent of a /proc/PID/stat line. Its second field, the command
// in parentheses, may itself hold spaces and parentheses: the fields after it follow the last ')'.
func parseStat(b []byte) (state byte, ppid int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], ppid, true
}
