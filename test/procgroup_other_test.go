//go:build !unix

package test

import (
	"errors"
	"os/exec"
)

// newProcessGroup: no process groups to kill here; killProcessGroup kills the command alone.
func newProcessGroup(*exec.Cmd) {}

// killProcessGroup kills cmd (not what it started: there are no process groups here) and reaps it.
func killProcessGroup(cmd *exec.Cmd) {
	cmd.Process.Kill()
	cmd.Wait()
}

// signalProcessGroup kills cmd (there are no process groups here) without reaping it.
func signalProcessGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// pauseProcess and resumeProcess: no SIGSTOP here (the tests that use them run on Linux only).
func pauseProcess(int) error  { return errors.New("pausing a process is not supported here") }
func resumeProcess(int) error { return errors.New("resuming a process is not supported here") }
