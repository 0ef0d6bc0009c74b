// Package handover owns the one value git-xet-transfer-agent passes to git-xet-transfer when it
// replaces itself with it at the first request: the bytes of the conversation it read from git-lfs
// (the init line and what followed), and whether it answered the init. The value travels in one
// environment variable (named by the commands, which alone read the environment), inline when small
// and through a private temporary file otherwise, so it fits every platform's limit on one variable.
//
// The value carries request lines, which may hold credentials (action headers): it is never logged,
// the temporary file is readable by its owner only and removed by Decode, and the receiver removes
// the variable from its environment before it starts any other program.
package handover

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Handover is what the receiving process continues from.
type Handover struct {
	// Ahead are the bytes read from the agent's stdin before the hand-over, in order: they come
	// before whatever stdin still holds.
	Ahead []byte
	// InitAnswered: the first line of Ahead is an init request that was answered (`{}`); the
	// receiver processes it without answering it again.
	InitAnswered bool
}

// inlineLimit bounds the encoded value kept in the variable itself (Windows allows 32,767
// characters in one variable; other systems allow more).
const inlineLimit = 16 << 10

const (
	inlineTag = "b64:"
	fileTag   = "file:"
)

// Encode returns the variable's value: "<0|1>:b64:<base64>" for a value within inlineLimit, else
// "<0|1>:file:<path>" of a new file in dir (the system's temp directory when dir is "") holding the
// bytes, which Decode removes.
func Encode(h Handover, dir string) (string, error) {
	flag := "0:"
	if h.InitAnswered {
		flag = "1:"
	}
	enc := base64.StdEncoding.EncodeToString(h.Ahead)
	if len(enc) <= inlineLimit {
		return flag + inlineTag + enc, nil
	}
	f, err := os.CreateTemp(dir, "git-xet-transfer-handover-*")
	if err != nil {
		return "", fmt.Errorf("handing over to git-xet-transfer: %w", err)
	}
	_, werr := f.Write(h.Ahead)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("handing over to git-xet-transfer: writing %s: %w", f.Name(), werr)
	}
	return flag + fileTag + f.Name(), nil
}

// Decode parses a value Encode returned, reading and removing its file when it names one.
func Decode(v string) (Handover, error) {
	flag, rest, ok := strings.Cut(v, ":")
	if !ok || (flag != "0" && flag != "1") {
		return Handover{}, errors.New("hand-over value is malformed (want 0: or 1: first); it is set by git-xet-transfer-agent, not by hand")
	}
	h := Handover{InitAnswered: flag == "1"}
	switch {
	case strings.HasPrefix(rest, inlineTag):
		b, err := base64.StdEncoding.DecodeString(rest[len(inlineTag):])
		if err != nil {
			return Handover{}, fmt.Errorf("hand-over value is malformed: %w", err)
		}
		h.Ahead = b
	case strings.HasPrefix(rest, fileTag):
		path := rest[len(fileTag):]
		b, err := os.ReadFile(path)
		if err != nil {
			return Handover{}, fmt.Errorf("reading the hand-over file: %w", err)
		}
		os.Remove(path)
		h.Ahead = b
	default:
		return Handover{}, errors.New("hand-over value is malformed (want b64: or file:)")
	}
	return h, nil
}
