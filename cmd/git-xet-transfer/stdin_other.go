//go:build !unix

package main

import (
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
)

// agentIO returns stdin and stdout as they are, and no pipes to hand off (see the unix version).
func agentIO(stdin io.Reader, stdout io.Writer) (io.Reader, io.Writer, *agent.Pipes) {
	return stdin, stdout, nil
}
