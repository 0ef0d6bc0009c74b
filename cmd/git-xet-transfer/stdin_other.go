//go:build !unix

package main

import "io"

// pollStdin returns stdin as it is (see the unix version).
func pollStdin(stdin io.Reader) io.Reader { return stdin }

// agentIO returns stdin and stdout as they are (see the unix version).
func agentIO(stdin io.Reader, stdout io.Writer) (io.Reader, io.Writer) { return stdin, stdout }
