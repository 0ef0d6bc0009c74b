//go:build unix

package main

import (
	"io"
	"os"
	"syscall"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/rawio"
)

// agentIO returns the protocol's reader and writer: stdin and stdout, when they are pipes or
// sockets, duplicated in non-blocking mode (pollStdin, pollFile) and read and written with raw
// system calls (internal/rawio), so that an agent waiting for git-lfs, or the leader of a push's
// agents serving several (agent/share), does not wake the runtime's monitor thread for each
// message. Anything else is used as it is. When both are pipes or sockets, the returned Pipes are
// those duplicates, which an upload agent may hand to the push's leading agent (agent/share).
func agentIO(stdin io.Reader, stdout io.Writer) (io.Reader, io.Writer, *agent.Pipes) {
	in, out := pollStdin(stdin), stdout
	var pipes agent.Pipes
	if f, ok := in.(*os.File); ok && in != stdin {
		if r, err := rawio.New(f); err == nil {
			in, pipes.In = r, f
		}
	}
	if f, ok := stdout.(*os.File); ok {
		if p := pollFile(f); p != nil {
			if w, err := rawio.New(p); err == nil {
				out, pipes.Out = w, p
			}
		}
	}
	if pipes.In == nil || pipes.Out == nil {
		return in, out, nil
	}
	return in, out, &pipes
}

// pollStdin returns the agent's stdin read through the Go runtime's poller when it is a pipe or a
// socket (what git-lfs gives it): a duplicate of the fd in non-blocking mode, opened as a new
// *os.File, so waiting for the next request parks a goroutine instead of blocking a thread in
// read(2). A thread blocked in a system call makes the runtime's monitor hand its P to another
// thread and poll every 20 µs for a while, once per request, which on a push of many small files
// is a large part of the agents' CPU (runtime.sysmon). Anything else (a terminal, which
// must keep its blocking mode for the shell sharing it; a file; a reader that is not a file) is
// returned as it is. Non-blocking mode belongs to the pipe's open file description, so the original
// fd is non-blocking too: nothing else reads it.
func pollStdin(stdin io.Reader) io.Reader {
	f, ok := stdin.(*os.File)
	if !ok {
		return stdin
	}
	if p := pollFile(f); p != nil {
		return p
	}
	return stdin
}

// pollFile returns a non-blocking duplicate of f, in the runtime's poller, when f is a pipe or a
// socket; else nil. Non-blocking mode belongs to the open file description: f is non-blocking too.
func pollFile(f *os.File) *os.File {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var polled *os.File
	_ = rc.Control(func(fd uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(fd), &st) != nil {
			return
		}
		if t := st.Mode & syscall.S_IFMT; t != syscall.S_IFIFO && t != syscall.S_IFSOCK {
			return
		}
		nfd, err := syscall.Dup(int(fd))
		if err != nil {
			return
		}
		syscall.CloseOnExec(nfd)
		if syscall.SetNonblock(nfd, true) != nil {
			syscall.Close(nfd)
			return
		}
		polled = os.NewFile(uintptr(nfd), f.Name())
	})
	return polled
}
