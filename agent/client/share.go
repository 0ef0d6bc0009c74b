package client

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/git-xet-transfer/git-xet-transfer/agent"

	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
)

// ShareMaxBytes: an upload to the embedded store smaller than this goes into the leader's batches
// (smallBatcher), which share their fsyncs, xorbs and shards. A larger file gains little (its fixed
// costs are a small part of its work) and is uploaded in a session of its own.
const ShareMaxBytes = 1 << 20

// sharing is a process's part in the push's group of agents (agent/share): the followers hand
// their conversations with git-lfs to the leader, which serves them with its own.
type sharing struct {
	off     bool // Options.NoShare
	once    sync.Once
	group   atomic.Pointer[share.Group] // nil until init, or when not sharing
	leading atomic.Bool
	batcher smallBatcher // the leader's small uploads
	turns   turns        // the leader's large transfers: related ones take turns (turns.go)
}

// procs is the GOMAXPROCS of this process: its share (Tune), or every core while it leads.
func (x *xetTransferer) procs() int {
	if x.sharing.leading.Load() {
		return runtime.NumCPU()
	}
	return x.tune.Procs
}

// HandOff implements agent.HandingOff: the conversation goes to the leader of the group of this
// process's repository, remote and store, unless this process leads it (it then serves the others'
// conversations, servePipe, and uses every core).
func (x *xetTransferer) HandOff(ctx context.Context, p agent.Pipes, buffered []byte) (share.Outcome, bool, error) {
	if x.sharing.off {
		return share.Outcome{}, false, nil
	}
	g := x.shareGroup(ctx)
	if g == nil {
		return share.Outcome{}, false, nil
	}
	out, handed, err := g.HandOff(ctx, p.In, p.Out, buffered)
	if !handed && g.Leading() && !x.sharing.leading.Swap(true) && x.o.SetProcs {
		runtime.GOMAXPROCS(runtime.NumCPU()) // it does the work of several processes now
	}
	return out, handed, err
}

// sharedUpload does a small standalone upload in the leader's next batch (smallBatcher). done is
// false when the caller uploads it on its own (not leading, a large file, or the batch failed);
// else res and err are the upload's.
func (x *xetTransferer) sharedUpload(ctx context.Context, obj agent.Object, sha [32]byte) (res agent.Result, done bool, err error) {
	if obj.Size >= ShareMaxBytes || !x.sharing.leading.Load() {
		return agent.Result{}, false, nil
	}
	res, err = x.sharing.batcher.do(ctx, obj, sha)
	if errors.Is(err, errBatch) {
		return agent.Result{}, false, nil
	}
	return res, true, err
}

// shareGroup is this process's group, made on first use; nil when it cannot be named.
func (x *xetTransferer) shareGroup(ctx context.Context) *share.Group {
	x.sharing.once.Do(func() {
		key, err := x.shareKey(ctx)
		if err != nil {
			x.o.Log.Debug().Err(err).Msg("share: not sharing this push")
			return
		}
		x.sharing.group.Store(share.New(key, x.servePipe, x.o.Log))
	})
	return x.sharing.group.Load()
}

// shareKey names what the processes of a group have in common: the repository (its git directory,
// where the chunk index and git-lfs's objects are), the remote, where its uploads go (shareWhere)
// and the shard cache.
func (x *xetTransferer) shareKey(ctx context.Context) (string, error) {
	where, err := x.shareWhere(ctx)
	if err != nil {
		return "", err
	}
	cache := x.o.Cache.Root
	if cache != "" {
		if cache, err = filepath.Abs(cache); err != nil {
			return "", err
		}
	}
	gd, err := x.repoGitDir(ctx)
	if err != nil {
		return "", err
	}
	if gd, err = filepath.Abs(gd); err != nil {
		return "", err
	}
	return where + "\x00cache=" + cache + "\x00git=" + gd + "\x00remote=" + x.init.Remote + "\x00op=" + x.init.Operation, nil
}

// shareWhere names where the group's uploads go: the embedded store's directory, or the LFS URL of
// a network remote (an LFS server's batch actions, or the Hub).
func (x *xetTransferer) shareWhere(ctx context.Context) (string, error) {
	dir := x.storeDir()
	if dir == "" && x.networkRemote(ctx) {
		ep, _ := x.remoteEndpoint(ctx) // found: networkRemote said so
		return "lfs=" + ep.Url, nil
	}
	if dir == "" {
		r, err := x.localRemote(ctx)
		if err != nil {
			return "", err
		}
		dir = r.StoreDir()
	}
	dir, err := filepath.Abs(dir)
	return "store=" + dir, err
}

// servePipe serves a follower's conversation in the leader (share.Handler) through this process's
// Transferer, as its own (see agent.ServePipe): every upload and download of the group, so that the
// versions of a file a push carries take turns (turns.go) and small files to the embedded store
// share batches.
func (x *xetTransferer) servePipe(ctx context.Context, p *share.Pipe) share.Outcome {
	return agent.ServePipe(ctx, x, x.init, x.o.Log, p)
}
