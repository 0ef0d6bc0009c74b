//go:build !unix

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/git-xet-transfer/git-xet-transfer/internal/handover"
)

// continueIn runs the full agent at path as a child with this process's stdin, stdout and stderr
// (it reads on from where this process stopped reading), handing it h in a private file its
// environment names (handover.Pass), and returns its exit code: a process cannot replace itself
// here.
func continueIn(path string, h handover.Handover, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	v, release, err := handover.Pass(h, "")
	if err != nil {
		return 1, err
	}
	defer release()
	cmd := exec.Command(path, "transfer")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Env = append(os.Environ(), handover.Var+"="+v)
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 1, fmt.Errorf("running %s: %w", path, err)
	}
	return 0, nil
}
