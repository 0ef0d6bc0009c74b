// Command git-xet-transfer-agent is what git-lfs runs as the Xet custom transfer agent
// (lfs.customtransfer.xet.path, written by `git-xet-transfer install` when this program sits beside
// git-xet-transfer). git-lfs starts lfs.concurrenttransfers of them for every transfer command, one
// after another, and most get no request: this small program answers their init and terminate
// itself, at about the cost of a git command, and at the first request (or anything but a clean
// init) replaces itself with git-xet-transfer from its own directory, handing it the conversation
// so far (internal/handover), which serves the rest exactly as if git-lfs had started it.
//
// It links only the protocol's decoder and the standard library, so that starting it costs what
// starting a small Go program costs. If git-xet-transfer cannot be started, every request gets an
// error naming the program and why.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/internal/handover"
	"github.com/git-xet-transfer/git-xet-transfer/protocol"
)

func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr, starter{
		locate:     fullAgent,
		cont:       continueIn,
		handAtOnce: debugging(os.Getenv("GIT_XET_LOG_LEVEL")),
	}))
}

// starter is how run reaches the full agent: locate finds it, cont starts it with the hand-over
// (continueIn: on Unix it replaces this process and returns only on failure; elsewhere it returns
// the child's exit code). handAtOnce hands every conversation over before reading it (a debug run,
// which logs each process's start-up).
type starter struct {
	locate     func() (string, error)
	cont       func(path string, h handover.Handover, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	handAtOnce bool
}

// debugging reports whether the log level the environment asks for (GIT_XET_LOG_LEVEL) is debug
// or finer.
func debugging(level string) bool {
	l := strings.ToLower(level)
	return l == "debug" || l == "trace"
}

// recorder keeps every byte read through it, what is handed over, up to recordLimit: past it
// (a request longer than git-lfs ever sends), over is set and nothing more is kept.
type recorder struct {
	r    io.Reader
	got  []byte
	over bool
}

// recordLimit is what the hand-over may need: the init line and the first request, each at most
// protocol.MaxLineLength, and what the decoder read ahead of them.
const recordLimit = 2*protocol.MaxLineLength + 64<<10

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	switch {
	case r.over:
	case len(r.got)+n > recordLimit:
		r.over, r.got = true, nil
	default:
		r.got = append(r.got, p[:n]...)
	}
	return n, err
}

// run answers a clean init and ends at terminate (or at the end of stdin) when no request came in
// between; otherwise it hands the conversation to the full agent, and returns its exit code (or
// this process's, when the full agent could not be started).
func run(stdin io.Reader, stdout, stderr io.Writer, s starter) int {
	rec := &recorder{r: stdin}
	dec := protocol.NewDecoder(rec)
	enc := protocol.NewEncoder(stdout)
	answered := false
	if !s.handAtOnce {
		var done bool
		var code int
		if answered, done, code = serveIdle(dec, enc, stderr); done {
			return code
		}
	}
	if rec.over { // what was read cannot be handed over whole: the rest is answered here
		return refuse(fmt.Errorf("a request before the first transfer was longer than %d bytes", protocol.MaxLineLength),
			answered, dec.Remaining(), stdin, enc, stderr)
	}
	path, err := s.locate()
	if err == nil {
		var code int
		code, err = s.cont(path, handover.Handover{Ahead: rec.got, InitAnswered: answered}, stdin, stdout, stderr)
		if err == nil {
			return code
		}
	}
	return refuse(err, answered, rec.got, stdin, enc, stderr)
}

// serveIdle answers a clean init (answered) and reads the next request: done when it is terminate
// or the end of stdin (code is the exit code then). Anything else is the full agent's to answer.
func serveIdle(dec *protocol.Decoder, enc *protocol.Encoder, stderr io.Writer) (answered, done bool, code int) {
	req, err := dec.Decode()
	if err != nil || req.Event != protocol.EventInit {
		return false, false, 0
	}
	if err := enc.InitOK(); err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer-agent: answering init: %v\n", err)
		return true, true, 1
	}
	req, err = dec.Decode()
	if errors.Is(err, io.EOF) || (err == nil && req.Event == protocol.EventTerminate) {
		return true, true, 0
	}
	return true, false, 0
}

// fullAgent is git-xet-transfer beside this program.
func fullAgent() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this program's path: %w", err)
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	name := "git-xet-transfer"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	path := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("git-xet-transfer is not beside git-xet-transfer-agent (%s): install both (install.sh, or a release archive)", path)
	}
	return path, nil
}

// refuse ends a conversation the full agent could not take: it says why on stderr and answers
// every transfer request with that error, until terminate or the end of stdin.
func refuse(cause error, answered bool, read []byte, stdin io.Reader, enc *protocol.Encoder, stderr io.Writer) int {
	msg := fmt.Sprintf("git-xet-transfer-agent: cannot start the transfer agent: %v", cause)
	fmt.Fprintln(stderr, msg)
	dec := protocol.NewDecoder(io.MultiReader(bytes.NewReader(read), stdin))
	for {
		req, err := dec.Decode()
		var me *protocol.MalformedError
		switch {
		case errors.As(err, &me):
			continue
		case err != nil:
			return 1
		case req.Event == protocol.EventInit && !answered:
			_ = enc.InitError(msg)
			return 1
		case req.Event == protocol.EventTerminate:
			return 1
		case req.Event == protocol.EventUpload || req.Event == protocol.EventDownload:
			if err := enc.CompleteError(req.Oid, msg); err != nil {
				return 1
			}
		}
	}
}
