package proctree

import (
	"bytes"
	"os"
	"strconv"
)

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
