// Package leader is the leader of the agent processes of one push or fetch: a decorator of the Xet
// client (agent/client) that owns what only a process serving the others' transfers can do. git-lfs
// gives each object to one of its agent processes; the processes of one push hand their
// conversations to one of them (sharing: agent/share, share.go), which serves them all through this
// decorator:
//   - small uploads are stored in batches, per store or CAS (smallbatch.go);
//   - related large transfers to one endpoint take turns, so that the versions of a file a push
//     or fetch carries each find the chunks of the ones before them (turns.go, kin.go);
//   - the large downloads it completed are offered to the next ones (recent.go).
//
// What the leader asks of the client is a Client; what the client asks of the leader during a
// transfer is a client.Coordinator, which the Leader is. A process that does not lead (or does not
// share: Options.NoShare) passes every transfer to its client as it is.
package leader

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// Options configure the leader.
type Options struct {
	Log zerolog.Logger
	// NoShare keeps each process's conversation with git-lfs in that process (GIT_XET_SHARE=0).
	NoShare bool
	// SetProcs raises GOMAXPROCS to every core once this process leads (off in tests that share a
	// process).
	SetProcs bool
	// Completed, when set, is told of every transfer this process completes, its own and those it
	// serves as the leader (the command adds them up for the run's summary line). It may be called
	// from several goroutines at once.
	Completed func(upload bool, obj agent.Object, res agent.Result)
}

// Client is what the leader asks of the Xet client it decorates (agent/client's *Client).
type Client interface {
	agent.Transferer
	// Scope says what the processes that may share their work have in common (the group's key).
	Scope(ctx context.Context) (client.Scope, error)
	// SmallBatch says where obj's upload may be stored in a batch of small uploads (false: on its
	// own).
	SmallBatch(ctx context.Context, obj agent.Object) (client.BatchTarget, bool)
	// UploadBatch stores objs, uploads of one BatchTarget, in one session: errs[i] is objs[i]'s
	// own failure, err the whole batch's (each is then uploaded on its own).
	UploadBatch(ctx context.Context, objs []agent.Object) (res []agent.Result, errs []error, err error)
	// BatchListing returns the objects of the LFS batch answer obj's action belongs to, each with
	// its own action, when the server lists them (client.ListingKey); an error when it does not.
	BatchListing(ctx context.Context, obj agent.Object) ([]agent.Object, error)
	// DownloadListed downloads the small files of the LFS batch answer obj's action belongs to
	// from the plans the server's listing carries: res[i] is objs[i]'s, verified in git-lfs's temp
	// dir, when errs[i] is nil; err when there is no listing.
	DownloadListed(ctx context.Context, obj agent.Object) (objs []agent.Object, res []agent.Result, errs []error, err error)
}

// Opener opens the client of a process after init; co is the process's Leader, which the client
// asks for turns and recent downloads.
type Opener func(init agent.Init, co client.Coordinator) Client

// New returns the agent.Opener of a process: the client open returns, decorated by a Leader.
func New(o Options, open Opener) agent.Opener {
	return func(ctx context.Context, init agent.Init) (agent.Transferer, error) {
		l := &Leader{o: o, init: init}
		l.c = open(init, l)
		l.batcher.c, l.batcher.log, l.batcher.transfers = l.c, o.Log, init.ConcurrentTransfers
		l.ahead.c, l.ahead.log = l.c, o.Log
		l.staged.c, l.staged.log = l.c, o.Log
		return l, nil
	}
}

// Leader is the Transferer of an agent process: its client, and when the process comes to lead
// its group (HandOff), what the leader does on top of it. Safe for concurrent use.
type Leader struct {
	o    Options
	init agent.Init
	c    Client

	once    sync.Once
	group   atomic.Pointer[share.Group] // nil until the first request, or when not sharing
	leading atomic.Bool
	batcher smallBatcher    // small uploads in batches (smallbatch.go)
	ahead   lookahead       // small uploads of a whole batch answer at once (lookahead.go)
	staged  staged          // small downloads of a whole batch answer at once (staged.go)
	turns   turns           // related large transfers take turns (turns.go)
	recent  recentDownloads // the large downloads this process completed (recent.go)
}

// Upload stores a small upload, while this process leads, with the other objects of its LFS batch
// answer when the server lists them (lookahead.go), else in the next batch to its store or CAS;
// every other upload, and one whose batch failed, is its client's.
func (l *Leader) Upload(ctx context.Context, obj agent.Object, progress func(int64)) (agent.Result, error) {
	if obj.Size < client.SmallUploadBytes && l.leading.Load() {
		if res, ok, err := l.ahead.take(ctx, obj); ok || err != nil {
			return l.tally(true, obj)(res, err)
		}
		if t, ok := l.c.SmallBatch(ctx, obj); ok {
			res, err := l.batcher.do(ctx, t, obj)
			if !errors.Is(err, errBatch) {
				return l.tally(true, obj)(res, err)
			}
		}
	}
	return l.tally(true, obj)(l.c.Upload(ctx, obj, progress))
}

// Download hands over a small download, while this process leads, staged with the other files
// of its LFS batch answer when the server lists them (staged.go); every other download is the
// client's (which asks the leader for its turn and recent downloads).
func (l *Leader) Download(ctx context.Context, obj agent.Object, progress func(int64)) (agent.Result, error) {
	if obj.Size < client.SmallUploadBytes && l.leading.Load() {
		if res, ok, err := l.staged.take(ctx, obj); ok || err != nil {
			return l.tally(false, obj)(res, err)
		}
	}
	return l.tally(false, obj)(l.c.Download(ctx, obj, progress))
}

// Close closes the group first (what it serves uses the client), then the lookahead's and the
// batches' runners and the recent downloads' links, then the client.
func (l *Leader) Close() error {
	var errs []error
	if g := l.group.Load(); g != nil {
		errs = append(errs, g.Close())
	}
	l.ahead.close()
	l.staged.close()
	l.batcher.close()
	errs = append(errs, l.recent.close())
	errs = append(errs, l.c.Close())
	return errors.Join(errs...)
}

// Leading implements client.Coordinator.
func (l *Leader) Leading() bool { return l.leading.Load() }

// UploadTurn implements client.Coordinator: while this process leads, an upload of
// client.SmallUploadBytes or more waits for its turn among the uploads to its endpoint it is
// related to (its sample shares a chunk with theirs, kin.go), the oldest file first.
func (l *Leader) UploadTurn(ctx context.Context, endpoint, path string, size int64) (done func(), err error) {
	if size < client.SmallUploadBytes || !l.leading.Load() {
		return func() {}, nil
	}
	s, err := sampleFile(path, size)
	if err != nil { // the upload's own open says what is wrong
		return func() {}, nil
	}
	return l.turns.take(ctx, endpoint, path, s)
}

// DownloadTurn implements client.Coordinator: a download waits for its turn among the downloads
// from its endpoint whose plans share a xorb with its own, in arrival order.
func (l *Leader) DownloadTurn(ctx context.Context, endpoint string, xorbs []hash.Hash) (done func(), err error) {
	kin := sample{}
	for _, x := range xorbs {
		kin[x] = struct{}{}
	}
	return l.turns.take(ctx, endpoint, "", kin)
}

// Recent implements client.Coordinator.
func (l *Leader) Recent() span.Local { return &l.recent }

// Downloaded implements client.Coordinator: while this process leads, a download of
// chunkindex.MinBytes or more is offered to the next ones (recent.go).
func (l *Leader) Downloaded(path, tmp, oid string, terms []span.Span) {
	if !l.leading.Load() {
		return
	}
	if err := l.recent.add(path, recentLink(tmp, oid), terms); err != nil {
		l.o.Log.Debug().Err(err).Msg("download: not offered to the next ones")
	}
}

// tally returns what tells Options.Completed of an upload (or download) of obj when it succeeded,
// and hands its result on.
func (l *Leader) tally(upload bool, obj agent.Object) func(agent.Result, error) (agent.Result, error) {
	return func(res agent.Result, err error) (agent.Result, error) {
		if err == nil && l.o.Completed != nil {
			l.o.Completed(upload, obj, res)
		}
		return res, err
	}
}
