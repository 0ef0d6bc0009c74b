//go:build unix

package test

import (
	"os/exec"
	"syscall"
)

// newProcessGroup makes cmd, once started, lead a process group of its own, which
// killProcessGroup kills with everything in it (git, git-lfs and the agents of a push).
func newProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killProcessGroup kills the group of a command started with newProcessGroup, and reaps it.
func killProcessGroup(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
}

// signalProcessGroup kills the group of a command started with newProcessGroup, without reaping
// it (for exec.Cmd.Cancel, and for what a command leaves running after it exits).
func signalProcessGroup(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// pauseProcess stops pid (SIGSTOP) where it is, so that a test looks at what it has written before
// it kills it; resumeProcess lets it go on.
func pauseProcess(pid int) error  { return syscall.Kill(pid, syscall.SIGSTOP) }
func resumeProcess(pid int) error { return syscall.Kill(pid, syscall.SIGCONT) }
