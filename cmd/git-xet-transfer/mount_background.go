package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
)

// startBackground runs the mount in a process of its own (a session of its own: the terminal's
// hang-up does not reach it) and returns once that process says it is mounted (0), or why it is
// not (1). Its output goes to the log file GIT_XET_LOG / xet.logfile names, else to
// .git/lfs/xet/mount.log.
func startBackground(args []string, f mountFlags, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "git-xet-transfer mount: %v\n", err)
		return 1
	}
	loc, err := gitrepo.Open("").Location(context.Background())
	if err != nil {
		return fail(err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	logPath := filepath.Join(loc.CommonDir, "lfs", "xet", "mount.log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return fail(err)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fail(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return fail(err)
	}
	cmd := exec.Command(exe, append([]string{"mount", "--ready-fd=3"}, withoutBackground(args)...)...)
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	detach(cmd)
	err = cmd.Start()
	w.Close()
	logFile.Close()
	if err != nil {
		r.Close()
		return fail(err)
	}
	msg, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	r.Close()
	if string(msg) == "ok\n" {
		fmt.Fprintf(stderr, "mounted %s at %s (process %d, log %s); `git xet-transfer unmount %s` unmounts it\n", f.rev, f.dir, cmd.Process.Pid, logPath, f.dir)
		cmd.Process.Release()
		return 0
	}
	cmd.Wait()
	if len(msg) == 0 {
		msg = []byte("the mount process ended before it mounted; see " + logPath)
	}
	return fail(fmt.Errorf("%s", strings.TrimSpace(string(msg))))
}

// withoutBackground is args without --background.
func withoutBackground(args []string) []string {
	var out []string
	for _, a := range args {
		switch a {
		case "--background", "-background", "--background=true", "-background=true":
			continue
		}
		out = append(out, a)
	}
	return out
}

// readyReporter returns what tells the process that started this one (--ready-fd) whether the mount
// is up: "ok", or the error. Without a descriptor it does nothing.
func readyReporter(fd int) func(error) {
	if fd <= 0 {
		return func(error) {}
	}
	var once sync.Once
	return func(err error) {
		once.Do(func() {
			f := os.NewFile(uintptr(fd), "ready")
			if f == nil {
				return
			}
			if err != nil {
				fmt.Fprintln(f, err)
			} else {
				fmt.Fprintln(f, "ok")
			}
			f.Close()
		})
	}
}
