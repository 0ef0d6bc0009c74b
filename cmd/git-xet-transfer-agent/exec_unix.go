//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/git-xet-transfer/git-xet-transfer/internal/handover"
)

// continueIn replaces this process with the full agent at path (same stdin, stdout, stderr and
// process id, so git-lfs sees no difference), handing it h through an inherited descriptor that
// its environment names (handover.Pass). It returns only when that fails.
func continueIn(path string, h handover.Handover, _ io.Reader, _, _ io.Writer) (int, error) {
	v, release, err := handover.Pass(h, "")
	if err != nil {
		return 1, err
	}
	env := append(os.Environ(), handover.Var+"="+v)
	err = syscall.Exec(path, []string{path, "transfer"}, env)
	release()
	return 1, fmt.Errorf("running %s: %w", path, err)
}
