// Package handover owns the one value git-xet-transfer-agent passes to git-xet-transfer when it
// hands it the conversation at the first request: the bytes of the conversation it read from
// git-lfs (the init line and what followed), and whether it answered the init.
//
// The bytes carry request lines, whose action headers may hold credentials, so they are never in
// an environment variable: another process of the same user reads a process's environment for as
// long as it lives (/proc/<pid>/environ keeps what the process started with, whatever it unsets).
// The variable, Var (which the commands alone set and read: no package below them reads the
// environment), holds only where the bytes are:
//
//   - unix (Pass, pass_unix.go): a temporary file unlinked as soon as it is created, so that no
//     name reaches it, inherited by the replacing program as an open descriptor, "<0|1>:fd:<n>";
//     Decode reads it and closes it, so that nothing holds it once it is taken;
//   - elsewhere (a child on the same handles): a private temporary file, "<0|1>:file:<path>",
//     readable by its owner only, which Decode reads and removes.
//
// The value is never logged, and the receiver removes the variable from its environment before it
// starts any other program.
package handover

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Var names the environment variable the start-up agent passes the hand-over in.
const Var = "GIT_XET_TRANSFER_HANDOVER"

// Handover is what the receiving process continues from.
type Handover struct {
	// Ahead are the bytes read from the agent's stdin before the hand-over, in order: they come
	// before whatever stdin still holds.
	Ahead []byte
	// InitAnswered: the first line of Ahead is an init request that was answered (`{}`); the
	// receiver processes it without answering it again.
	InitAnswered bool
}

const (
	fdTag   = "fd:"
	fileTag = "file:"
)

// maxAhead bounds what Decode reads: the start-up agent hands over one request line and what its
// reader took in with it (git-lfs's lines are far shorter; a line of the protocol is refused past
// 1 MiB).
const maxAhead = 64 << 20

func flag(h Handover) string {
	if h.InitAnswered {
		return "1:"
	}
	return "0:"
}

// Decode parses a value Pass returned: it reads the file it names and removes it, or
// reads the descriptor it names and closes it.
func Decode(v string) (Handover, error) {
	fl, rest, ok := strings.Cut(v, ":")
	if !ok || (fl != "0" && fl != "1") {
		return Handover{}, errors.New("hand-over value is malformed (want 0: or 1: first); it is set by git-xet-transfer-agent, not by hand")
	}
	h := Handover{InitAnswered: fl == "1"}
	var err error
	switch {
	case strings.HasPrefix(rest, fdTag):
		h.Ahead, err = readFD(rest[len(fdTag):])
	case strings.HasPrefix(rest, fileTag):
		h.Ahead, err = readFile(rest[len(fileTag):])
	default:
		err = errors.New("hand-over value is malformed (want fd: or file:)")
	}
	if err != nil {
		return Handover{}, err
	}
	return h, nil
}

// readFile reads and removes the hand-over file at path.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the hand-over file: %w", err)
	}
	defer f.Close()
	defer os.Remove(path)
	return readAll(f)
}

// readAll reads a regular file from its first byte (the writer left the shared offset at its end),
// at most maxAhead bytes.
func readAll(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the hand-over: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxAhead {
		return nil, fmt.Errorf("the hand-over is not a file of at most %d bytes (%v, %d bytes)", maxAhead, fi.Mode().Type(), fi.Size())
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the hand-over: %w", err)
	}
	return b, nil
}
