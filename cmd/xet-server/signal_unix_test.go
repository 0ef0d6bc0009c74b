//go:build unix

package main

import (
	"os"
	"syscall"
)

// terminateSelf sends this process SIGTERM, as a service manager stops the server.
func terminateSelf() error { return syscall.Kill(os.Getpid(), syscall.SIGTERM) }

// hangUpSelf sends this process SIGHUP, as `systemctl reload` does.
func hangUpSelf() error { return syscall.Kill(os.Getpid(), syscall.SIGHUP) }
