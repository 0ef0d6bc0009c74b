package leader

import (
	"context"
	"runtime"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
)

// HandOff implements agent.HandingOff: the conversation goes to the leader of the group of this
// process's repository, remote and store, unless this process leads it (it then serves the others'
// conversations, servePipe, and uses every core).
func (l *Leader) HandOff(ctx context.Context, p agent.Pipes, buffered []byte) (share.Outcome, bool, error) {
	if l.o.NoShare {
		return share.Outcome{}, false, nil
	}
	g := l.shareGroup(ctx)
	if g == nil {
		return share.Outcome{}, false, nil
	}
	out, handed, err := g.HandOff(ctx, p.In, p.Out, buffered)
	if !handed && g.Leading() && !l.leading.Swap(true) && l.o.SetProcs {
		runtime.GOMAXPROCS(runtime.NumCPU()) // it does the work of several processes now
	}
	return out, handed, err
}

// shareGroup is this process's group, made on first use; nil when it cannot be named.
func (l *Leader) shareGroup(ctx context.Context) *share.Group {
	l.once.Do(func() {
		key, err := l.shareKey(ctx)
		if err != nil {
			l.o.Log.Debug().Err(err).Msg("share: not sharing this push")
			return
		}
		l.group.Store(share.New(key, l.servePipe, l.o.Log))
	})
	return l.group.Load()
}

// shareKey names what the processes of a group have in common (client.Scope): the repository (its
// git directory, where the chunk index and git-lfs's objects are), the remote and the operation,
// where its uploads go and the shard cache.
func (l *Leader) shareKey(ctx context.Context) (string, error) {
	s, err := l.c.Scope(ctx)
	if err != nil {
		return "", err
	}
	return s.Where + "\x00cache=" + s.Cache + "\x00git=" + s.GitDir + "\x00remote=" + s.Remote + "\x00op=" + s.Operation, nil
}

// servePipe serves a follower's conversation in the leader (share.Handler) through this process's
// Transferer, the leader itself, as its own (see agent.ServePipe): every upload and download of
// the group, so that the versions of a file a push carries take turns (turns.go) and small files
// share batches (smallbatch.go).
func (l *Leader) servePipe(ctx context.Context, p *share.Pipe) share.Outcome {
	return agent.ServePipe(ctx, l, l.init, l.o.Log, p)
}
