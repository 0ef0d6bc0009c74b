package agent

import (
	"context"
	"errors"
	"io"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
	"github.com/git-xet-transfer/git-xet-transfer/protocol"
)

// Served is what a leading process serves of another process's conversation: it is asked for each
// upload or download request before it runs. A request the leader would not do the same way as that process is
// put back, and the conversation given back to its process, which keeps it.
type Served func(ctx context.Context, obj Object) bool

// ServePipe serves a follower's conversation in the leader (the body of its share.Handler): its
// requests for init's operation go through t, the leader's own Transferer (opened for init), and
// are answered on the follower's stdout,
// until terminate or the end of its input (Exit), a request serves refuses (Stay), or the leader's
// group closes (the conversation is given back at a request boundary with the bytes read ahead).
func ServePipe(ctx context.Context, t Transferer, serves Served, init Init, log zerolog.Logger, p *share.Pipe) share.Outcome {
	in := newInput(p.Buffered, p.In)
	enc := protocol.NewEncoder(p.Out)
	o := Options{Log: log.With().Int("for", p.Pid).Logger(), ProgressInterval: defaultProgressInterval}
	back := func(stay bool) share.Outcome { return share.Outcome{Resume: in.remaining(), Stay: stay} }
	for served := 0; ; served++ {
		if stopping(p) { // checked first too: a request already buffered is not read past the stop
			return back(false)
		}
		req, err := in.dec.Decode()
		switch {
		case err != nil && stopping(p): // the read the stop's deadline cut
			return back(false)
		case errors.Is(err, io.EOF):
			return share.Outcome{Exit: true}
		case err != nil:
		case (req.Event == protocol.EventUpload || req.Event == protocol.EventDownload) && !serves(ctx, objectOf(req)):
			in.dec.UnreadLast()
			return back(true)
		case req.Path != "" && !filepath.IsAbs(req.Path):
			req.Path = filepath.Join(p.Dir, req.Path)
		}
		done, err := serveRequest(ctx, readResult{req, err}, init, t, enc, o, served)
		if err != nil {
			return share.Outcome{Exit: true, Err: err.Error()}
		}
		if done {
			return share.Outcome{Exit: true}
		}
	}
}

// stopping reports whether the leader serving p is closing (share.Pipe.Stopping).
func stopping(p *share.Pipe) bool {
	select {
	case <-p.Stopping():
		return true
	default:
		return false
	}
}
