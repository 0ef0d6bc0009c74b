package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Decoder reads requests, one JSON object per line. Not safe for concurrent use.
type Decoder struct {
	r       *bufio.Reader
	line    int
	partial []byte // a line cut short by a read error: the next read goes on from it
	last    []byte // the last line decoded (UnreadLast)
}

// NewDecoder reads requests from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10)}
}

// Decode returns the next request. It returns io.EOF when the input ends cleanly between lines,
// io.ErrUnexpectedEOF-wrapped errors for a truncated last line, and *MalformedError for a line
// that is not a valid request. Blank lines are skipped. After a *MalformedError the decoder can go on
// with the next line.
func (d *Decoder) Decode() (*Request, error) {
	for {
		line, err := d.readLine()
		if err != nil {
			return nil, err
		}
		d.line++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		d.last = line
		return parse(line, d.line)
	}
}

// Remaining returns the bytes read from the input and not decoded yet: a line a read error cut
// short, and what is buffered after it. An agent handing its conversation to another process
// (agent/share) hands these over with it.
func (d *Decoder) Remaining() []byte {
	b, _ := d.r.Peek(d.r.Buffered())
	return append(slices.Clone(d.partial), b...)
}

// UnreadLast puts the last line Decode returned back in front of Remaining (and of the next
// Decode).
func (d *Decoder) UnreadLast() {
	if d.last != nil {
		d.partial = append(slices.Clone(d.last), d.partial...)
		d.last = nil
		d.line--
	}
}

func (d *Decoder) readLine() ([]byte, error) {
	if i := bytes.IndexByte(d.partial, '\n'); i >= 0 { // a line put back (UnreadLast)
		line := d.partial[:i+1]
		d.partial = d.partial[i+1:]
		return line, nil
	}
	buf := d.partial
	d.partial = nil
	for {
		chunk, err := d.r.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLineLength {
			d.skipLine(err)
			d.line++
			return nil, &MalformedError{Line: d.line, Reason: fmt.Sprintf("line longer than %d bytes", MaxLineLength)}
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(bytes.TrimSpace(buf)) == 0 {
				return nil, io.EOF
			}
			// A last line without newline: git-lfs always ends lines, but accept a complete object.
			return buf, nil
		default:
			d.partial = buf // a deadline, say: the next read goes on from here
			return nil, fmt.Errorf("reading custom-transfer requests: %w", err)
		}
	}
}

// skipLine discards the rest of an overlong line.
func (d *Decoder) skipLine(err error) {
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = d.r.ReadSlice('\n')
	}
}

// Encoder writes responses, one JSON object per line, each with a single Write. It is safe for
// concurrent use: a mutex keeps lines whole, so progress from a worker goroutine and a complete
// from the loop never interleave. Nothing else may write to the underlying writer.
type Encoder struct {
	mu  sync.Mutex
	w   io.Writer
	err error // first write error; later writes return it
}

// NewEncoder writes responses to w (the agent's stdout).
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

func (e *Encoder) write(v any) error { return e.writeAfter(nil, v) }

// writeAfter writes the lines in pre, then v as a line, with a single Write.
func (e *Encoder) writeAfter(pre []byte, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %T: %w", v, err)
	}
	b := append(append(pre, line...), '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return e.err
	}
	if _, err := e.w.Write(b); err != nil {
		e.err = fmt.Errorf("writing to git-lfs (stdout): %w", err)
		return e.err
	}
	return nil
}

// InitOK answers init with {}.
func (e *Encoder) InitOK() error { return e.write(struct{}{}) }

// InitError answers init with an error; git-lfs then stops this worker.
func (e *Encoder) InitError(message string) error {
	return e.write(InitResponse{Error: &Error{Code: CodeInit, Message: message}})
}

// Progress reports bytesSoFar of oid, bytesSinceLast of them new since the previous report.
func (e *Encoder) Progress(oid string, bytesSoFar, bytesSinceLast int64) error {
	return e.write(Progress{Event: EventProgress, Oid: oid, BytesSoFar: bytesSoFar, BytesSinceLast: bytesSinceLast})
}

// Complete reports oid done; path is the downloaded file ("" for uploads). Progress messages in
// before go first, in the same Write (one wake-up of git-lfs's reader per object, not one per line).
func (e *Encoder) Complete(oid, path string, before ...Progress) error {
	var b []byte
	for _, p := range before {
		line, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encoding progress: %w", err)
		}
		b = append(append(b, line...), '\n')
	}
	return e.writeAfter(b, Complete{Event: EventComplete, Oid: oid, Path: path})
}

// CompleteError reports that oid failed; the process goes on with the next request.
func (e *Encoder) CompleteError(oid, message string) error {
	return e.write(Complete{Event: EventComplete, Oid: oid, Error: &Error{Code: CodeTransfer, Message: message}})
}
