// Package agent is the custom transfer agent's event loop: it answers git-lfs's init, runs each
// upload or download request through a Transferer (the Xet work: agent/client, decorated by
// agent/leader), reports progress and completion, and exits on terminate. Errors of one object are
// reported for that object and the loop goes on; only a broken conversation with git-lfs ends the
// process with an error.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/protocol"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// Init is what git-lfs's init message tells the agent.
type Init struct {
	Operation           string // protocol.OperationUpload or protocol.OperationDownload
	Remote              string // the remote's name (e.g. "origin") or a URL
	Concurrent          bool
	ConcurrentTransfers int // lfs.concurrenttransfers: how many agent processes run side by side
}

// Object is one transfer request.
type Object struct {
	Oid    string // SHA-256, lowercase hex
	Size   int64
	Path   string           // uploads: the file to read
	Action *lfsbatch.Action // the LFS server's action (batch mode); nil in standalone mode
}

// objectOf is the Object of an upload or download request.
func objectOf(req *protocol.Request) Object {
	obj := Object{Oid: req.Oid, Size: req.Size, Path: req.Path}
	if req.Action != nil {
		obj.Action = &lfsbatch.Action{Href: req.Action.Href, Header: req.Action.Header}
	}
	return obj
}

// Mode is how a transfer was done, for the log ("mode" field of each transfer's line).
type Mode string

// The modes of the Xet client (agent/client).
const (
	ModeBatch    Mode = "batch"    // an LFS server's xet action named the CAS
	ModeEmbedded Mode = "embedded" // the embedded store of a local remote (standalone)
	ModeHub      Mode = "hub"      // standalone with a Hub remote: the agent asked the Hub itself
	ModeHubLFS   Mode = "hub-lfs"  // a Hub object not in Xet, fetched whole and verified
	ModeLFSFile  Mode = "lfs-file" // a plain LFS object kept in a local remote
)

// Result is what a transfer did, for the log and (downloads) for git-lfs.
type Result struct {
	Mode         Mode
	Path         string // downloads: the verified file handed to git-lfs
	NewBytes     int64  // bytes stored or fetched that were not already there
	DedupedBytes int64  // bytes found already stored
}

// Transferer does the work of one agent process. Calls of one conversation come one at a time
// (git-lfs sends the next request only after the previous complete), but the leader of a push's
// agents (HandingOff) serves several conversations at once; progress may be called from any
// goroutine.
type Transferer interface {
	Upload(ctx context.Context, obj Object, progress func(done int64)) (Result, error)
	// Download writes the object to a new file and returns its path in Result.Path; the file must
	// hold exactly the object (verified) when Download returns nil.
	Download(ctx context.Context, obj Object, progress func(done int64)) (Result, error)
	Close() error
}

// Opener makes the Transferer for a process after init. It must be cheap (git-lfs starts
// concurrenttransfers processes at once, even for one object): heavy set-up belongs in the first
// request.
type Opener func(ctx context.Context, init Init) (Transferer, error)

// Options configure Run.
type Options struct {
	Open Opener
	Log  zerolog.Logger
	// ProgressInterval is the least time between two progress messages of one object (default
	// defaultProgressInterval). The first one is sent at once.
	ProgressInterval time.Duration
	// Pipes, when set, let an upload agent hand its conversation to the push's leading agent
	// process (see HandingOff and agent/share).
	Pipes *Pipes
	// FirstRequest, when set, is called once when the first request after init comes (before it is
	// served or handed off), not at all when the conversation ends first (terminate, end of input).
	// The command resolves its settings from git config there, so that the processes git-lfs starts
	// and never sends a request to run no git.
	FirstRequest func()
	// Ahead are bytes of the conversation another process read from in before this one (the
	// start-up agent's hand-over): they are read first. InitAnswered says that its first line, an
	// init request, was answered there: Run opens the transfer for it without answering again.
	Ahead        []byte
	InitAnswered bool
}

// defaultProgressInterval is Options.ProgressInterval when it is not set.
const defaultProgressInterval = 100 * time.Millisecond

// Run speaks the protocol on in/out until terminate or the end of in. It returns nil after a
// clean end (terminate, or git-lfs closing stdin between requests) and an error when the
// conversation itself fails (no init, a malformed request it cannot attribute to an object, a
// write to git-lfs failing); the caller exits non-zero then, with the error on stderr.
func Run(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = defaultProgressInterval
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	enc := protocol.NewEncoder(out)
	input := newInput(o.Ahead, in)
	dec := input.dec
	init, t, err := openTransfer(ctx, dec, enc, o)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := t.Close(); cerr != nil {
			o.Log.Warn().Err(cerr).Msg("closing transfer state")
		}
	}()
	malformed, over, err := awaitFirst(parent, dec, in)
	if over {
		return err
	}
	if o.FirstRequest != nil {
		o.FirstRequest()
	}
	served := 0
	if malformed != nil {
		if done, err := serveRequest(ctx, *malformed, init, t, enc, o, served); done || err != nil {
			return err
		}
	} else if h, ok := t.(HandingOff); ok && o.Pipes != nil {
		// The process's own ctx: a leader elected here serves the others' conversations until the
		// process is stopped or closes its Transferer, not only while this conversation lasts.
		if dec, over, err = handOffLoop(parent, h, *o.Pipes, in, input.remaining()); over {
			return err
		}
	}
	reqs := readRequests(ctx, cancel, dec, in)
	defer reqs.stop()
	for {
		r, ok := reqs.next(ctx)
		if !ok {
			// Input ended without terminate: git-lfs went away, which is not this process's
			// failure unless our own caller cancelled.
			return parent.Err()
		}
		done, err := serveRequest(ctx, r, init, t, enc, o, served)
		if done || err != nil {
			return err
		}
		served++
	}
}

// awaitFirst waits for the first request after init and puts it back in dec: most of the processes
// git-lfs starts get none (it starts lfs.concurrenttransfers of them for every command), and those
// end here without handing off or serving (no git). over: the conversation ended before one, with
// err (nil after terminate; parent's error at the end of input, as Run's loop returns, or when
// parent ends first; a read error that is not one request's). malformed: the first request could
// not be read (not put back; Run answers it itself, without handing off).
//
// The end of parent (SIGINT, SIGTERM) stops the wait through in's read deadline, as
// requests.stop does: an idle process ends at the first signal.
func awaitFirst(parent context.Context, dec *protocol.Decoder, in io.Reader) (malformed *readResult, over bool, err error) {
	if d, ok := in.(interface{ SetReadDeadline(time.Time) error }); ok {
		defer context.AfterFunc(parent, func() { _ = d.SetReadDeadline(time.Now()) })()
	}
	req, err := dec.Decode()
	if err != nil && parent.Err() != nil {
		return nil, true, parent.Err()
	}
	var me *protocol.MalformedError
	switch {
	case errors.Is(err, io.EOF):
		return nil, true, parent.Err()
	case errors.As(err, &me):
		return &readResult{nil, err}, false, nil
	case err != nil:
		return nil, true, err
	case req.Event == protocol.EventTerminate:
		return nil, true, nil
	}
	dec.UnreadLast()
	return nil, false, nil
}

// openTransfer reads the init request, opens the transfer state for it and answers it.
func openTransfer(ctx context.Context, dec *protocol.Decoder, enc *protocol.Encoder, o Options) (Init, Transferer, error) {
	req, err := dec.Decode()
	if errors.Is(err, io.EOF) {
		return Init{}, nil, errors.New("git-lfs closed the agent's input before init; run git-xet-transfer only through git-lfs (see `git-xet-transfer help`)")
	}
	if err != nil {
		_ = enc.InitError(err.Error())
		return Init{}, nil, err
	}
	if req.Event != protocol.EventInit {
		err := fmt.Errorf("first custom-transfer request is %q, want init; is git-lfs this agent's caller?", req.Event)
		_ = enc.InitError(err.Error())
		return Init{}, nil, err
	}
	init := Init{
		Operation:           req.Operation,
		Remote:              req.Remote,
		Concurrent:          req.Concurrent,
		ConcurrentTransfers: req.ConcurrentTransfers,
	}
	t, err := o.Open(ctx, init)
	if err != nil && o.InitAnswered {
		return Init{}, nil, fmt.Errorf("init (answered before the hand-over): %w", err)
	}
	if err != nil {
		if werr := enc.InitError(err.Error()); werr != nil {
			return Init{}, nil, werr
		}
		return Init{}, nil, fmt.Errorf("init: %w", err)
	}
	if !o.InitAnswered {
		if err := enc.InitOK(); err != nil {
			t.Close()
			return Init{}, nil, err
		}
	}
	o.Log.Debug().Str("operation", init.Operation).Str("remote", redact.URL(init.Remote)).
		Int("concurrenttransfers", init.ConcurrentTransfers).Msg("init")
	return init, t, nil
}

// serveRequest answers one request after init (served: the requests answered before it). done: the
// conversation is over (terminate, or an error, returned).
func serveRequest(ctx context.Context, r readResult, init Init, t Transferer, enc *protocol.Encoder, o Options, served int) (done bool, err error) {
	if r.err != nil {
		var me *protocol.MalformedError
		if errors.As(r.err, &me) && me.Oid != "" {
			o.Log.Error().Err(r.err).Msg("malformed request")
			return false, enc.CompleteError(me.Oid, r.err.Error())
		}
		return true, r.err
	}
	req := r.req
	switch req.Event {
	case protocol.EventTerminate:
		return true, nil
	case protocol.EventInit:
		return true, errors.New("second init request on one agent process; git-lfs sends init once")
	case protocol.EventUpload, protocol.EventDownload:
		if req.Event != init.Operation {
			return false, enc.CompleteError(req.Oid, fmt.Sprintf("%s request on an agent started for %s", req.Event, init.Operation))
		}
		return false, transfer(ctx, t, enc, req, o, served == 0)
	}
	return false, nil
}

// transfer runs one request and answers it with progress and complete (first: the process's first
// request, see progress.start). It returns an error only when writing to git-lfs fails.
func transfer(ctx context.Context, t Transferer, enc *protocol.Encoder, req *protocol.Request, o Options, first bool) error {
	obj := objectOf(req)
	p := newProgress(enc, obj.Oid, obj.Size, o.ProgressInterval)
	p.start(first)
	began := time.Now()
	var res Result
	var err error
	if req.Event == protocol.EventUpload {
		res, err = t.Upload(ctx, obj, p.update)
	} else {
		res, err = t.Download(ctx, obj, p.update)
	}
	elapsed := time.Since(began)
	if perr := p.err(); perr != nil {
		return perr
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (the agent was stopped: git-lfs ended or was interrupted)", err)
		}
		// git-lfs prints the message and keeps it in its traces: no URL in it keeps a password or a
		// query (a signed URL, a CAS URL a batch answer gave), whichever layer wrote it.
		msg := redact.Printable(redact.Text(err.Error()))
		o.Log.Error().Str("op", req.Event).Str("oid", obj.Oid).Int64("size", obj.Size).
			Dur("elapsed_ms", elapsed).Str("error", msg).Msg("transfer failed")
		return enc.CompleteError(obj.Oid, msg)
	}
	last, err := p.finish()
	if err != nil {
		return err
	}
	ev := o.Log.Info().Str("op", req.Event).Str("mode", string(res.Mode)).Str("oid", obj.Oid).
		Int64("size", obj.Size).Int64("new_bytes", res.NewBytes).Int64("deduped_bytes", res.DedupedBytes).
		Dur("elapsed_ms", elapsed)
	if secs := elapsed.Seconds(); secs > 0 {
		ev = ev.Float64("MBps", float64(obj.Size)/1e6/secs)
	}
	ev.Msg("transfer complete")
	return enc.Complete(obj.Oid, res.Path, last...)
}
