//go:build !unix

package main

import "os/exec"

// detach is nothing here (the mount runs on Linux only).
func detach(*exec.Cmd) {}
