package client

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/hub"
	"github.com/git-xet-transfer/git-xet-transfer/localchunks"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// Objects finds where the Xet data of a repository's LFS objects is read from, for a reader that
// is not git-lfs's transfer agent (the mount): the endpoints, credentials and CAS clients of
// downloads. The remote's LFS endpoint decides, as for a download:
//   - xet.store / GIT_XET_STORE, or a remote on this machine: its embedded store;
//   - a network endpoint: its batch API, asked for the xet transfer; an answer in xet (xet-server)
//     names the CAS and the Xet hash, a basic answer with bridge URLs (the Hub) the Xet hash,
//     whose CAS is reached through the Hub's read-token route.
//
// Safe for concurrent use; each endpoint is opened once.
type Objects struct {
	x     *xetTransferer
	api   once[*hub.API]
	mu    sync.Mutex
	adapt map[*endpoint]*concurrency.Controller // endpoints of the Hub's token routes, which carry none
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
// repository of o.Git.
func NewObjects(o Options, remote string) *Objects {
	o = o.withDefaults()
	init := agent.Init{Operation: "download", Remote: remote, ConcurrentTransfers: 1}
	x := &xetTransferer{o: o, init: init, tune: Tune(runtime.NumCPU(), 1, o.Concurrency), findRemote: ResolveLocalRemote,
		storeDir: sync.OnceValue(o.storeDir)}
	x.hubs = hubAccess{git: o.Git, env: o.Credentials, remote: remote, operation: init.Operation, httpClient: o.HTTPClient, userAgent: o.UserAgent}
	x.sharing.off = true
	return &Objects{x: x, adapt: map[*endpoint]*concurrency.Controller{}}
}

// ChunkIndex is the repository's local chunk index (the chunks of objects in .git/lfs/objects), or
// nil when the git directory is unknown.
func (s *Objects) ChunkIndex(ctx context.Context) *localchunks.Index { return s.x.chunkIndex(ctx) }

// Close closes the endpoints opened.
func (s *Objects) Close() error { return s.x.Close() }

// Find finds the Source of each of objs (at most hub.MaxBatch), in order.
func (s *Objects) Find(ctx context.Context, objs []lfsbatch.Object) []Found {
	x := s.x
	if x.storeDir() != "" {
		return s.findEmbedded(ctx, objs)
	}
	ep, err := x.remoteEndpoint(ctx)
	if err != nil {
		return failAll(objs, err)
	}
	if ep.Local() {
		return s.findEmbedded(ctx, objs)
	}
	out, err := s.findBatch(ctx, objs)
	if err != nil && len(objs) > 1 && ctx.Err() == nil {
		// An object the server refuses fails the whole answer: ask for each alone, so that only
		// that one fails.
		out = make([]Found, len(objs))
		for i := range objs {
			out[i] = s.Find(ctx, objs[i:i+1])[0]
		}
		return out
	}
	if err != nil {
		return failAll(objs, err)
	}
	return out
}

func failAll(objs []lfsbatch.Object, err error) []Found {
	out := make([]Found, len(objs))
	for i := range out {
		out[i].Err = err
	}
	return out
}

// findEmbedded looks objs up in the embedded store of standalone mode.
func (s *Objects) findEmbedded(ctx context.Context, objs []lfsbatch.Object) []Found {
	x := s.x
	e, r, err := x.standaloneEndpoint(ctx, false)
	if err == nil && e == nil && r != nil {
		err = fmt.Errorf("remote %q has no Xet store (%s): its objects are plain LFS files; `git lfs pull` them", x.init.Remote, r.StoreDir())
	}
	if err != nil {
		return failAll(objs, err)
	}
	out := make([]Found, len(objs))
	for i, o := range objs {
		sha, err := hash.ParseSHA256(o.OID)
		if err != nil {
			out[i].Err = err
			continue
		}
		file, size, err := e.local.LookupSHA256(ctx, sha)
		switch {
		case errors.Is(err, cas.ErrNotFound) || errors.Is(err, store.ErrNotFound):
			out[i].Err = fmt.Errorf("object %s is not in the Xet store %s", o.OID, e.where)
		case err != nil:
			out[i].Err = fmt.Errorf("looking up %s in the Xet store %s: %w", o.OID, e.where, err)
		case int64(size) != o.Size:
			out[i].Err = fmt.Errorf("the Xet store %s maps %s to a file of %d bytes, the pointer says %d", e.where, o.OID, size, o.Size)
		default:
			out[i].Source = Source{CAS: e.cas, File: file, Concurrency: x.tune.Download, Retry: retryPolicy(x.o.Git), Where: e.where}
		}
	}
	return out
}

// batchAPI is the client of the remote's LFS endpoint with the user's credential (one per Objects:
// it remembers that the server wants the credential).
func (s *Objects) batchAPI(ctx context.Context) (*hub.API, string, error) {
	r, err := s.x.hubs.credentials(ctx)
	if err != nil {
		return nil, "", err
	}
	lfsURL, err := r.LFSURL(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("remote %q: %w", s.x.init.Remote, err)
	}
	api, err := s.api.get(ctx, func(context.Context) (*hub.API, error) {
		return hub.NewAPI(r, s.x.o.HTTPClient, s.x.o.UserAgent), nil
	})
	return api, lfsURL, err
}

// findBatch asks the remote's batch API for objs, offering the xet transfer.
func (s *Objects) findBatch(ctx context.Context, objs []lfsbatch.Object) ([]Found, error) {
	api, lfsURL, err := s.batchAPI(ctx)
	if err != nil {
		return nil, err
	}
	ans, err := api.Batch(ctx, lfsURL, "download", []string{"xet"}, "", objs)
	if err != nil {
		return nil, err
	}
	out := make([]Found, len(objs))
	for i, o := range objs {
		a := ans.Objects[o.OID].Actions["download"]
		if a == nil {
			out[i].Err = fmt.Errorf("the LFS server at %s gives object %s no download action", hub.Where(lfsURL), o.OID)
			continue
		}
		if ans.Transfer == "xet" {
			out[i] = s.fromXetAction(ctx, a)
		} else {
			out[i] = s.fromBridge(ctx, a, lfsURL, o.OID)
		}
	}
	return out, nil
}

// fromXetAction is the Source a xet action names (xet-server): its CAS and X-Xet-Hash.
func (s *Objects) fromXetAction(ctx context.Context, a *lfsbatch.Action) Found {
	ba, err := parseBatchAction(a)
	if err != nil {
		return Found{Err: err}
	}
	file, err := ba.File()
	if err != nil {
		return Found{Err: err}
	}
	e := s.x.batchEndpoint(ctx, ba)
	return Found{Source: Source{CAS: e.cas, File: file, Adapt: e.down, Retry: retryPolicy(s.x.o.Git), Where: e.where}}
}

// fromBridge is the Source of a basic action whose href is a bridge URL (the Hub): the Xet hash it
// names, read through the Hub's read-token route of the revision the agent would use.
func (s *Objects) fromBridge(ctx context.Context, a *lfsbatch.Action, lfsURL, oid string) Found {
	file, bridged, err := hub.BridgeHash(a.Href)
	if err != nil {
		return Found{Err: err}
	}
	if !bridged {
		return Found{Err: fmt.Errorf("object %s is not stored in Xet on %s (the server offers a plain download): `git lfs pull` it", oid, hub.Where(lfsURL))}
	}
	hc, err := s.x.hub(ctx)
	if err != nil {
		return Found{Err: err}
	}
	e, err := s.x.hubReadEndpoint(ctx, hc, hc.TokenURL(false, s.x.hubRef(ctx)))
	if err != nil {
		return Found{Err: err}
	}
	return Found{Source: Source{CAS: e.cas, File: file, Adapt: s.controller(e), Retry: retryPolicy(s.x.o.Git), Where: e.where}}
}

// controller is the adaptive controller of a network endpoint's ranges in flight: its own, else
// one made here for it (the Hub's token routes).
func (s *Objects) controller(e *endpoint) *concurrency.Controller {
	if e.down != nil {
		return e.down
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.adapt[e]
	if c == nil {
		_, c = s.x.tune.adaptive()
		s.adapt[e] = c
	}
	return c
}
