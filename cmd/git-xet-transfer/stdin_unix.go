//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
)

// pollStdin returns the agent's stdin read through the Go runtime's poller when it is a pipe or a
// socket (what git-lfs gives it): the fd is switched to non-blocking mode and reopened as a new
// *os.File, so waiting for the next request parks a goroutine instead of blocking a thread in
// read(2). A thread blocked in a system call makes the runtime's monitor hand its P to another
// thread and poll every 20 µs for a while; with one request per small object that bookkeeping was
// a fifth of the agents' CPU on a push of 5,000 small files. Anything else (a terminal, a file, a
// reader that is not os.Stdin) is returned as it is: a terminal shared with the shell must keep its
// blocking mode.
func pollStdin(stdin io.Reader) io.Reader {
	if stdin != io.Reader(os.Stdin) {
		return stdin
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(0, &st); err != nil {
		return stdin
	}
	if t := st.Mode & syscall.S_IFMT; t != syscall.S_IFIFO && t != syscall.S_IFSOCK {
		return stdin
	}
	if err := syscall.SetNonblock(0, true); err != nil {
		return stdin
	}
	polled = os.NewFile(0, "/dev/stdin")
	return polled
}

// polled keeps the reopened stdin reachable: an unreachable *os.File would be closed by its
// finalizer.
var polled *os.File
