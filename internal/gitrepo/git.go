package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Git runs git commands in one directory (the repository git-lfs runs the agent in).
type Git struct {
	Dir string // "" = the current directory
}

// Run runs git with args and returns its trimmed stdout. A non-zero exit is an error carrying
// git's stderr.
func (g Git) Run(ctx context.Context, args ...string) (string, error) {
	out, err := g.output(ctx, args...)
	return strings.TrimSpace(out), err
}

// output runs git with args and returns its stdout untouched, also when git fails.
func (g Git) output(ctx context.Context, args ...string) (string, error) {
	out, err := g.Input(ctx, nil, args...)
	return string(out), err
}

// Input runs git with args, stdin on its standard input (nil: none), and returns its stdout
// untouched (NUL-separated lists, blob contents), also when git fails. A non-zero exit is an error
// carrying git's stderr.
func (g Git) Input(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = g.Dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return out.Bytes(), &GitError{Args: args, Msg: msg, Err: err}
	}
	return out.Bytes(), nil
}

// GitError is a failed git command.
type GitError struct {
	Args []string
	Msg  string
	Err  error
}

func (e *GitError) Error() string { return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), e.Msg) }
func (e *GitError) Unwrap() error { return e.Err }

// ExitCode returns git's exit code, or -1 when git did not run.
func (e *GitError) ExitCode() int {
	var ee *exec.ExitError
	if errors.As(e.Err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Config returns the value of a git config key, "" when it is not set. It runs git: code that
// reads settings asks a Repo's snapshot instead.
func (g Git) Config(ctx context.Context, key string) (string, error) {
	v, err := g.Run(ctx, "config", "--get", key)
	var ge *GitError
	if errors.As(err, &ge) && ge.ExitCode() == 1 {
		return "", nil // not set
	}
	return v, err
}

// GitDir returns the absolute path of the repository's git directory.
func (g Git) GitDir(ctx context.Context) (string, error) {
	d, err := g.Run(ctx, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", fmt.Errorf("finding the repository's .git directory (is the agent running inside a git repository?): %w", err)
	}
	return filepath.Clean(d), nil
}

// TopLevel returns the working tree's root, or "" in a bare repository.
func (g Git) TopLevel(ctx context.Context) string {
	d, err := g.Run(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return ""
	}
	return d
}
