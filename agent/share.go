package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
	"github.com/git-xet-transfer/git-xet-transfer/localshards"
)

// ShareMaxBytes: an upload to the embedded store smaller than this is handed to the agent process
// leading the push's agents (agent/share), which shares its fsyncs, xorbs and shards among them.
// A larger file gains little (its fixed costs are a small part of its work) and keeps what is done
// per file here: the local chunk index, all cores.
const ShareMaxBytes = 1 << 20

// sharing is a process's part in handing uploads to, or serving them for, the other agent
// processes of the store it uploads to.
type sharing struct {
	off     bool // GIT_XET_SHARE=0
	once    sync.Once
	group   atomic.Pointer[share.Group] // nil until the first small upload, or when not sharing
	leading atomic.Bool
	batcher smallBatcher // the leader's uploads
}

// shareOff reads GIT_XET_SHARE: 0 turns sharing off (each process uploads its own objects).
func shareOff() bool { return os.Getenv("GIT_XET_SHARE") == "0" }

// procs is the GOMAXPROCS of this process: its share (Tune), or every core while it leads.
func (x *xetTransferer) procs() int {
	if x.sharing.leading.Load() {
		return runtime.NumCPU()
	}
	return x.tune.Procs
}

// sharedUpload does a small standalone upload the shared way: handed to the leader of the store's
// agents, or, in the leader, in its next batch (smallBatcher). done is false when this process
// must upload it on its own (sharing is off, failed, or the batch failed); else res and err are
// the upload's.
func (x *xetTransferer) sharedUpload(ctx context.Context, obj Object, sha [32]byte) (res Result, done bool, err error) {
	if x.sharing.off || obj.Size >= ShareMaxBytes {
		return Result{}, false, nil
	}
	g := x.shareGroup(ctx)
	if g == nil {
		return Result{}, false, nil
	}
	path, err := filepath.Abs(obj.Path)
	if err != nil {
		return Result{}, false, nil
	}
	obj.Path = path
	if rep, ok := g.Do(ctx, share.Request{Oid: obj.Oid, Size: obj.Size, Path: path}); ok {
		return Result{Mode: "embedded", NewBytes: rep.NewBytes, DedupedBytes: rep.DedupedBytes, Shared: true}, true, nil
	}
	if !g.Leading() {
		return Result{}, false, nil
	}
	if !x.sharing.leading.Swap(true) && x.o.SetProcs {
		runtime.GOMAXPROCS(runtime.NumCPU()) // it does the work of several processes now
	}
	res, err = x.sharing.batcher.do(ctx, obj, sha)
	if errors.Is(err, errBatch) {
		return Result{}, false, nil
	}
	return res, true, err
}

// shareGroup is this process's group, made on first use; nil when it cannot be named.
func (x *xetTransferer) shareGroup(ctx context.Context) *share.Group {
	x.sharing.once.Do(func() {
		key, err := x.shareKey(ctx)
		if err != nil {
			x.o.Log.Debug().Err(err).Msg("share: not sharing uploads")
			return
		}
		x.sharing.group.Store(share.New(key, x.serveShared, x.o.Log))
	})
	return x.sharing.group.Load()
}

// shareKey names what the processes of a group have in common: the store and the shard cache.
func (x *xetTransferer) shareKey(ctx context.Context) (string, error) {
	dir := x.o.StoreDir
	if dir == "" {
		r, err := x.localRemote(ctx)
		if err != nil {
			return "", err
		}
		dir = r.StoreDir()
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	cache := x.o.CacheRoot
	if cache == "" {
		if cache, err = localshards.Root(); err != nil {
			return "", err
		}
	}
	if cache, err = filepath.Abs(cache); err != nil {
		return "", err
	}
	return "store=" + dir + "\x00cache=" + cache, nil
}

// serveShared does another agent process's upload, in the leader.
func (x *xetTransferer) serveShared(ctx context.Context, r share.Request) (share.Reply, error) {
	if r.Size < 0 || r.Size >= ShareMaxBytes || !filepath.IsAbs(r.Path) {
		return share.Reply{}, fmt.Errorf("not an upload to share: %d bytes at %q", r.Size, r.Path)
	}
	sha, err := oidBytes(r.Oid)
	if err != nil {
		return share.Reply{}, err
	}
	res, err := x.sharing.batcher.do(ctx, Object{Oid: r.Oid, Size: r.Size, Path: r.Path}, sha)
	if err != nil {
		return share.Reply{}, err
	}
	return share.Reply{NewBytes: res.NewBytes, DedupedBytes: res.DedupedBytes}, nil
}
