//go:build !unix

package main

import "io"

// pollStdin returns stdin as it is (see the unix version).
func pollStdin(stdin io.Reader) io.Reader { return stdin }
