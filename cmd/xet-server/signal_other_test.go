//go:build !unix

package main

import "errors"

// terminateSelf: a process cannot send itself SIGTERM here, so the tests that stop the server that
// way fail with this error rather than pass without stopping it.
func terminateSelf() error { return errors.New("no SIGTERM to self on this platform") }

// hangUpSelf: no SIGHUP to self here either; the reload test fails with this error.
func hangUpSelf() error { return errors.New("no SIGHUP to self on this platform") }
