package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

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
	// Ctrl-C, SIGTERM or a hang-up while the mount comes up stops it: nothing was complete and the
	// user was told nothing, so nothing may go on in the session it runs in. The handler is in
	// place before the mount process is started: a signal between its start and a handler set up
	// later would end this process by default and leave the mount process to mount on its own.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	loc, err := gitrepo.Open("").Location(ctx)
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
	if ctx.Err() != nil {
		logFile.Close()
		return fail(fmt.Errorf("interrupted before %s was mounted; no mount process was started", f.dir))
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
	answer := make(chan []byte, 1)
	go func() { // ends when the mount process writes its word or ends (the pipe's only writer)
		msg, _ := io.ReadAll(io.LimitReader(r, 64<<10))
		answer <- msg
	}()
	var msg []byte
	select {
	case msg = <-answer:
	case <-ctx.Done():
		stopStarting(cmd)
		<-answer
		r.Close()
		return fail(fmt.Errorf("interrupted before %s was mounted; the mount process %d is stopped", f.dir, cmd.Process.Pid))
	}
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

// stopStarting ends a mount process that has not said it is up: SIGTERM, which it answers by
// unmounting whatever it mounted, then SIGKILL after startStopGrace (a start-up blocked in a system
// call, a FIFO's open, retries through SIGTERM), and reaps it.
func stopStarting(cmd *exec.Cmd) {
	ended := make(chan struct{})
	go func() { cmd.Wait(); close(ended) }()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ended:
	case <-time.After(startStopGrace):
		_ = cmd.Process.Kill()
		<-ended
	}
}

// startStopGrace is how long a mount process stopped during its start-up has to end on its own:
// within it and the kill after it, Ctrl-C ends both processes in under 2 s.
const startStopGrace = time.Second

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
