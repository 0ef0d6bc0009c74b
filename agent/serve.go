package agent

import (
	"context"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
	"github.com/git-xet-transfer/git-xet-transfer/protocol"
)

// ServePipe serves a follower's conversation in the leader (the body of its share.Handler): its
// requests for init's operation go through t, the leader's own Transferer (opened for init), and
// are answered on the follower's stdout.
//
// The conversation ends, and its transfer in flight is cancelled, when ctx ends (the leader is
// stopped, or the follower is gone: share ends it then) or the follower's stdin does (its git-lfs
// went away: Exit, as at terminate). When the leader's group closes (share.Pipe.Stopping) it is
// given back with the bytes read and not served (Resume). A request's failure is answered to
// git-lfs; a failed write to git-lfs ends the conversation with Exit and the error.
func ServePipe(ctx context.Context, t Transferer, init Init, log zerolog.Logger, p *share.Pipe) share.Outcome {
	in := newInput(p.Buffered, p.In)
	enc := protocol.NewEncoder(p.Out)
	o := Options{Log: log.With().Int("for", p.Pid).Logger(), ProgressInterval: defaultProgressInterval}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reqs := readRequests(ctx, cancel, in.dec, p.In)
	terminated, err := servePiped(ctx, reqs, t, enc, init, o, p)
	reqs.stop() // before the decoder's rest is read
	switch {
	case err != nil:
		return share.Outcome{Exit: true, Err: err.Error()}
	case terminated || reqs.ended():
		return share.Outcome{Exit: true}
	case stopping(p):
		return share.Outcome{Resume: in.remaining()}
	}
	return share.Outcome{Exit: true, Err: "the agent leading the transfers was stopped: " + context.Cause(ctx).Error()}
}

// servePiped answers the requests of reqs until terminate (terminated), a write to git-lfs or a read
// of its requests failing (err), or there is none to serve (the input ended, ctx did, or the group
// is closing: its deadline cut the read of the next request).
func servePiped(ctx context.Context, reqs *requests, t Transferer, enc *protocol.Encoder, init Init, o Options, p *share.Pipe) (terminated bool, err error) {
	for served := 0; ; served++ {
		r, ok := reqs.next(ctx)
		if !ok || fatal(r.err) && stopping(p) {
			return false, nil
		}
		if r.err == nil && r.req.Path != "" && !filepath.IsAbs(r.req.Path) {
			r.req.Path = filepath.Join(p.Dir, r.req.Path)
		}
		done, err := serveRequest(ctx, r, init, t, enc, o, served)
		if err != nil || done {
			return err == nil, err
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
