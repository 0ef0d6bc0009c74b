package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkindex"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// Objects is where the mount reads LFS objects from: Plans.Locate finds each object's Xet file
// (the embedded store, an LFS server's xet action, the Hub's bridge URL and read token: the
// endpoints, credentials and CAS clients of downloads), and Objects adds what a reader needs of
// its endpoint: the CAS client and the controller of its ranges in flight. Safe for concurrent
// use; Close it.
type Objects struct {
	p     *Plans
	mu    sync.Mutex
	adapt map[*endpoint]*concurrency.Controller // endpoints that carry none (the Hub's token routes)
}

// Source is where one object's bytes come from: a Xet file of a CAS.
type Source struct {
	CAS  cas.Client
	File hash.Hash // the Xet file hash
	// Adapt sets the ranges in flight over a network CAS (one controller per endpoint); nil for the
	// store on this machine, which takes Concurrency.
	Adapt       *concurrency.Controller
	Concurrency int
	Retry       retry.Policy // git-lfs's lfs.transfer.maxretries and maxretrydelay
	Where       string       // the CAS URL or store directory, for messages
}

// Found is what Find learned of one object: its Source, or why it cannot be read through Xet.
type Found struct {
	Source Source
	Err    error
}

// NewObjects returns the finder of the objects of remote (a remote's name, URL or path) in the
// repository of o.Git. Nothing is resolved before the first Find.
func NewObjects(ctx context.Context, o Options, remote string) (*Objects, error) {
	p, err := NewPlans(ctx, o, remote)
	if err != nil {
		return nil, err
	}
	return &Objects{p: p, adapt: map[*endpoint]*concurrency.Controller{}}, nil
}

// ChunkIndex is the repository's local chunk index (the chunks of objects in .git/lfs/objects), or
// nil when the git directory is unknown.
func (s *Objects) ChunkIndex(ctx context.Context) *chunkindex.Index { return s.p.x.chunkIndex(ctx) }

// Close closes the endpoints opened.
func (s *Objects) Close() error { return s.p.Close() }

// Find finds the Source of each of objs, in order.
func (s *Objects) Find(ctx context.Context, objs []lfsbatch.Object) []Found {
	out := make([]Found, len(objs))
	locs, err := s.p.Locate(ctx, objs)
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	for i, l := range locs {
		switch l.State {
		case InXet:
			out[i].Source = s.source(ctx, l)
		case Missing:
			out[i].Err = fmt.Errorf("remote %q does not have object %s", s.p.x.init.Remote, objs[i].OID)
		case PlainLFS:
			out[i].Err = fmt.Errorf("remote %q keeps object %s as a plain LFS file, not in Xet: `git lfs pull` it", s.p.x.init.Remote, objs[i].OID)
		default:
			out[i].Err = l.Err
			if out[i].Err == nil {
				out[i].Err = errors.New("the remote could not be asked")
			}
		}
	}
	return out
}

// source is the Source of an object in Xet: its endpoint's CAS, and how many ranges go in flight.
func (s *Objects) source(ctx context.Context, l Located) Source {
	x := s.p.x
	src := Source{CAS: l.e.cas, File: l.File, Retry: retryPolicy(ctx, x.o.Git), Where: l.Where}
	if l.e.local != nil {
		src.Concurrency = x.tune.Download // the store on this machine: fixed counts
		return src
	}
	src.Adapt = s.controller(l.e)
	return src
}

// controller is the adaptive controller of a network endpoint's ranges in flight: its own, else
// one made here for it.
func (s *Objects) controller(e *endpoint) *concurrency.Controller {
	if e.down != nil {
		return e.down
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.adapt[e]
	if c == nil {
		_, c = s.p.x.tune.adaptive()
		s.adapt[e] = c
	}
	return c
}
