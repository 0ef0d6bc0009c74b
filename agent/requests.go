package agent

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/protocol"
)

type readResult struct {
	req *protocol.Request
	err error
}

// requests are a conversation's requests, read on a goroutine of its own so that the end of
// git-lfs's input is seen while a transfer runs: git-lfs sends nothing while it waits for a
// complete, so a read that returns then means git-lfs went away (or broke the protocol), and the
// conversation's ctx is cancelled to stop the transfer.
//
// The reader is owned by the caller of readRequests, which ends it with stop before it returns.
type requests struct {
	c      <-chan readResult // closed when the reader ends
	in     io.Reader         // what the decoder reads: stop interrupts it through its read deadline
	cancel context.CancelFunc
	eof    atomic.Bool // the input ended cleanly between requests
	wg     sync.WaitGroup
}

// readRequests starts reading dec's requests (from in) until terminate, the end of the input, a
// read error or the end of ctx; cancel is the conversation's, called at the end of the input and at
// a read error. A request read when ctx ends is put back in dec (UnreadLast), so that what the
// conversation read and did not serve can be handed on (Decoder.Remaining).
func readRequests(ctx context.Context, cancel context.CancelFunc, dec *protocol.Decoder, in io.Reader) *requests {
	c := make(chan readResult)
	r := &requests{c: c, in: in, cancel: cancel}
	r.wg.Go(func() { r.run(ctx, dec, c) })
	return r
}

func (r *requests) run(ctx context.Context, dec *protocol.Decoder, c chan<- readResult) {
	defer close(c)
	for {
		req, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			r.eof.Store(true)
			r.cancel()
			return
		}
		select {
		case c <- readResult{req, err}:
		case <-ctx.Done():
			if req != nil {
				dec.UnreadLast()
			}
			return
		}
		if fatal(err) {
			r.cancel()
			return
		}
		if req != nil && req.Event == protocol.EventTerminate {
			return
		}
	}
}

// fatal: the conversation cannot go on after err (a read error that is not one request's).
func fatal(err error) bool {
	var me *protocol.MalformedError
	return err != nil && !errors.As(err, &me)
}

// next returns the next request; ok is false when there is none to serve: the input ended, or ctx
// did (the conversation is being stopped).
func (r *requests) next(ctx context.Context) (res readResult, ok bool) {
	select {
	case res, ok = <-r.c:
		return res, ok
	case <-ctx.Done():
		return readResult{}, false
	}
}

// ended reports whether the input ended cleanly between requests (git-lfs closed it).
func (r *requests) ended() bool { return r.eof.Load() }

// stop ends the reader and waits for it: it cancels the conversation and, when the reader waits for
// input, makes that read fail through the input's read deadline (the agent's stdin and the pipes a
// leader serves have one). A reader of input without a deadline is not waited for: it ends when
// its input does.
func (r *requests) stop() {
	r.cancel()
	d, ok := r.in.(interface{ SetReadDeadline(time.Time) error })
	if !ok || d.SetReadDeadline(time.Unix(1, 0)) != nil {
		return
	}
	r.wg.Wait()
}
