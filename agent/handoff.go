package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"

	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
	"github.com/git-xet-transfer/git-xet-transfer/protocol"
)

// Pipes are the agent's stdin and stdout as files it can hand to another agent process
// (agent/share): non-blocking descriptors in the runtime's poller, the same pipes Run reads and
// writes.
type Pipes struct {
	In, Out *os.File
}

// HandingOff is a Transferer that can hand the whole conversation to another agent process of the
// push (after init, before the first request). handed false: the caller goes on itself. Else the
// conversation ended there (out.Exit; err set when it ended without a word: the caller exits
// with it) or was given back (out.Resume: the bytes read ahead, which come first).
type HandingOff interface {
	HandOff(ctx context.Context, p Pipes, buffered []byte) (out share.Outcome, handed bool, err error)
}

// input is a conversation's decoder: bytes another process read ahead first, then in.
type input struct {
	ahead *bytes.Reader
	dec   *protocol.Decoder
}

func newInput(ahead []byte, in io.Reader) *input {
	br := bytes.NewReader(ahead)
	return &input{ahead: br, dec: protocol.NewDecoder(io.MultiReader(br, in))}
}

// remaining is what was read from the conversation's input and not decoded.
func (c *input) remaining() []byte {
	b := c.dec.Remaining()
	rest := make([]byte, c.ahead.Len())
	_, _ = c.ahead.Read(rest)
	return append(b, rest...)
}

// handOffLoop hands the conversation to the leader of the push's agents while there is one to
// take it (buffered: what was read from in and not decoded). over: the conversation ended there,
// and the process ends with err; else it goes on itself with the returned decoder.
func handOffLoop(ctx context.Context, h HandingOff, p Pipes, in io.Reader, buffered []byte) (*protocol.Decoder, bool, error) {
	for {
		out, handed, err := h.HandOff(ctx, p, buffered)
		switch {
		case !handed:
			return newInput(buffered, in).dec, false, nil
		case err != nil:
			return nil, true, err
		case out.Exit && out.Err != "":
			return nil, true, errors.New(out.Err)
		case out.Exit:
			return nil, true, nil
		}
		buffered = out.Resume
	}
}
