// Package protocol holds the messages of the Git LFS custom transfer protocol as git-lfs speaks it
// (docs/custom-transfers.md, tq/custom.go): line-delimited JSON requests on the agent's stdin (init,
// upload, download, terminate) and responses on its stdout (the init reply, progress, complete).
//
// It decodes and validates requests and encodes responses; it makes no decisions about what a
// transfer does. Unknown fields are ignored, as git-lfs may add some.
package protocol

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
)

// Events of requests (git-lfs -> agent) and responses (agent -> git-lfs).
const (
	EventInit      = "init"
	EventUpload    = "upload"
	EventDownload  = "download"
	EventTerminate = "terminate"
	EventProgress  = "progress"
	EventComplete  = "complete"
)

// Operations named by an init request.
const (
	OperationUpload   = "upload"
	OperationDownload = "download"
)

// Error codes sent in responses. git-lfs prints them as "[code] message" and does not interpret
// them; the values follow git-xet's.
const (
	CodeInit     = 32 // init failed
	CodeTransfer = 2  // one object failed
)

// MaxLineLength bounds one request line. git-lfs's requests are a few hundred bytes (a token in
// the action headers makes them a few KiB); anything longer is refused rather than buffered.
const MaxLineLength = 1 << 20

// Action is the batch API action git-lfs copies into a transfer request: href and headers, which
// the agent interprets (here: the Xet CAS location and token refresh route). It is nil in
// standalone mode.
type Action struct {
	Href      string            `json:"href"`
	Header    map[string]string `json:"header,omitempty"`
	ExpiresIn int64             `json:"expires_in,omitempty"`
	// ExpiresAt is kept as text: git-lfs always sends it, as the zero time when unset.
	ExpiresAt string `json:"expires_at,omitempty"`
}

// Request is any message git-lfs sends. Which fields are set depends on Event; Decode checks them.
type Request struct {
	Event string `json:"event"`

	// init
	Operation           string `json:"operation,omitempty"`
	Remote              string `json:"remote,omitempty"`
	Concurrent          bool   `json:"concurrent,omitempty"`
	ConcurrentTransfers int    `json:"concurrenttransfers,omitempty"`

	// upload, download
	Oid    string  `json:"oid,omitempty"`
	Size   int64   `json:"size,omitempty"`
	Path   string  `json:"path,omitempty"` // uploads only: the file to read
	Action *Action `json:"action,omitempty"`
}

// Error is the error object of an init reply or a complete message.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("[%d] %s", e.Code, e.Message) }

// InitResponse answers init: {} on success, {"error":{...}} on failure.
type InitResponse struct {
	Error *Error `json:"error,omitempty"`
}

// Progress reports bytes transferred for one object.
type Progress struct {
	Event          string `json:"event"` // "progress"
	Oid            string `json:"oid"`
	BytesSoFar     int64  `json:"bytesSoFar"`
	BytesSinceLast int64  `json:"bytesSinceLast"`
}

// Complete ends one object: Path is the downloaded file (downloads only); Error marks a failure of
// this object only.
type Complete struct {
	Event string `json:"event"` // "complete"
	Oid   string `json:"oid"`
	Path  string `json:"path,omitempty"`
	Error *Error `json:"error,omitempty"`
}

// MalformedError reports a request line that cannot be used: not JSON, an unknown event, or a
// missing or invalid field. Line counts request lines from 1.
type MalformedError struct {
	Line   int
	Reason string
	Text   string // the start of the offending line, for the error message
	// Event and Oid are set when the line was JSON with a known event and a valid oid, so the
	// agent can fail just that object.
	Event, Oid string
}

func (e *MalformedError) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("malformed custom-transfer request on line %d: %s", e.Line, e.Reason)
	}
	return fmt.Sprintf("malformed custom-transfer request on line %d: %s (got %q)", e.Line, e.Reason, e.Text)
}

// parse decodes and validates one request line.
func parse(line []byte, n int) (*Request, error) {
	bad := func(format string, args ...any) error {
		text := strings.TrimSpace(string(line))
		if len(text) > 120 {
			text = text[:120] + "..."
		}
		e := &MalformedError{Line: n, Reason: fmt.Sprintf(format, args...), Text: redact(text)}
		return e
	}
	var r Request
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, bad("not a JSON object: %v", err)
	}
	withOid := func(err error) error {
		if me, ok := err.(*MalformedError); ok && lfsobject.ValidOid(r.Oid) {
			me.Event, me.Oid = r.Event, r.Oid
		}
		return err
	}
	switch r.Event {
	case EventInit:
		if r.Operation != OperationUpload && r.Operation != OperationDownload {
			return nil, bad("init has operation %q, want \"upload\" or \"download\"", r.Operation)
		}
		if r.ConcurrentTransfers < 0 {
			return nil, bad("init has concurrenttransfers %d, want >= 0", r.ConcurrentTransfers)
		}
	case EventUpload, EventDownload:
		if !lfsobject.ValidOid(r.Oid) {
			return nil, bad("%s has oid %q, want 64 lowercase hex digits (a SHA-256)", r.Event, r.Oid)
		}
		if r.Size < 0 {
			return nil, withOid(bad("%s of %s has size %d, want >= 0", r.Event, r.Oid, r.Size))
		}
		if r.Event == EventUpload && r.Path == "" {
			return nil, withOid(bad("upload of %s has no path", r.Oid))
		}
	case EventTerminate:
	case "":
		return nil, bad("no \"event\" field")
	default:
		return nil, bad("unknown event %q", r.Event)
	}
	return &r, nil
}

// redact hides the value of anything that looks like a token in text shown in an error.
func redact(text string) string {
	for _, key := range []string{"Token\":\"", "Authorization\":\"", "token\":\"", "authorization\":\""} {
		for from := 0; ; {
			i := strings.Index(text[from:], key)
			if i < 0 {
				break
			}
			start := from + i + len(key)
			end := strings.IndexByte(text[start:], '"')
			if end < 0 {
				text = text[:start] + "[redacted]"
				break
			}
			text = text[:start] + "[redacted]" + text[start+end:]
			from = start + len("[redacted]")
		}
	}
	return text
}
