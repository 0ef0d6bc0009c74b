package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/hub"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/localshards"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// endpoint is a CAS and the shard cache used with it.
type endpoint struct {
	key   string // its name among the client's endpoints (Coordinator turns are per endpoint)
	mode  agent.Mode
	cas   cas.Client
	cache *localshards.Cache // nil when the cache could not be opened (uploads go on without it)
	local *embedded.CAS      // embedded mode
	where string             // for messages: CAS URL or store path
	// up and down set the xorb uploads and range fetches in flight of a network endpoint, adapting
	// to its link (Tuning); nil for the embedded store (the fixed counts).
	up, down *concurrency.Controller
	// verifiesSHA256: the CAS refuses a shard whose files do not hash to the SHA-256 it claims
	// (batchAction.VerifiesSHA256), so an upload claims the oid instead of hashing the file.
	verifiesSHA256 bool
}

func (x *Client) openCache(endpointName string) *localshards.Cache {
	root := x.o.Cache.Root
	if root == "" {
		x.o.Log.Debug().Msg("no shard cache (uploads dedupe only within a file and by asking the CAS)")
		return nil
	}
	c, err := localshards.Open(localshards.EndpointDir(root, endpointName), localshards.Options{Log: x.o.Log, MergeOwnBytes: MergeOwnShardBytes,
		SizeLimit: x.o.Cache.SizeLimit, MaxEntries: x.o.Cache.MaxEntries})
	if err != nil {
		x.o.Log.Warn().Err(err).Msg("opening the shard cache; going on without it")
		return nil
	}
	return c
}

// batchEndpoint returns the CAS client for a batch action, one per CAS URL per process (its token
// source refreshes through the action's href).
func (x *Client) batchEndpoint(ctx context.Context, ba *batchAction) *endpoint {
	e, _ := x.endpoints.Get(ctx, ba.CasURL, func(ctx context.Context) (*endpoint, error) { return x.newBatchEndpoint(ctx, ba), nil })
	return e
}

func (x *Client) newBatchEndpoint(ctx context.Context, ba *batchAction) *endpoint {
	e := &endpoint{key: ba.CasURL, mode: agent.ModeBatch, cas: actionCAS(ctx, x.o, ba, &x.hubs), cache: x.openCache(ba.CasURL), where: redact.URL(ba.CasURL), verifiesSHA256: ba.VerifiesSHA256}
	e.up, e.down = x.tune.adaptive()
	return e
}

// actionCAS is the CAS client of a batch action, its token renewed as batchRefresher says.
func actionCAS(ctx context.Context, o Options, ba *batchAction, h *hubAccess) cas.Client {
	ts := cas.NewRefreshingToken(ba.Token, ba.Exp, batchRefresher(o, ba, h))
	return cas.NewHTTP(cas.HTTPOptions{
		Endpoint:     ba.CasURL,
		Token:        ts,
		SessionID:    ba.SessionID,
		UserAgent:    o.UserAgent,
		HTTPClient:   o.HTTPClient,
		Log:          o.Log,
		StallTimeout: o.StallTimeout,
		Retry:        retryPolicy(ctx, o.Git),
	})
}

// batchRefresher is how a batch action's CAS token is renewed: at href with the action's own
// Authorization when it has one (xet-server's refresh credential), else with the user's credential
// (the Hub, whose actions carry only the X-Xet-* headers).
func batchRefresher(o Options, ba *batchAction, h *hubAccess) func(ctx context.Context) (casapi.Token, error) {
	if lfsbatch.Header(ba.Auth, "Authorization") != "" || ba.Href == "" {
		return func(ctx context.Context) (casapi.Token, error) {
			return hub.RefreshToken(ctx, o.HTTPClient, ba.Href, ba.Auth, o.UserAgent, o.StallTimeout)
		}
	}
	return func(ctx context.Context) (casapi.Token, error) {
		hc, err := h.get(ctx)
		if err != nil {
			return casapi.Token{}, err
		}
		return hc.Token(ctx, ba.Href, ba.SessionID)
	}
}

// BatchTarget is where the leader may store an upload in a batch of small uploads (UploadBatch):
// the uploads of one Key go to one CAS in one session.
type BatchTarget struct {
	Key string // the endpoint's key (the embedded store's directory is not needed: "embedded")
	// Network: the CAS is a server (a batch action's CAS: xet-server, the Hub), where each xorb
	// and shard costs a round trip, so the batch's files share their xorbs; the embedded store
	// keeps each file's chunks in xorbs of its own (see UploadBatch).
	Network bool
}

// SmallBatch says where obj's upload may be batched with others: the embedded store of standalone
// mode (no action, and no network remote), the Hub of Hub mode (one batch call for the batch's
// objects), or the CAS of a xet batch action. false: obj is uploaded on its own (an action that
// does not parse fails in its own upload).
func (x *Client) SmallBatch(ctx context.Context, obj agent.Object) (BatchTarget, bool) {
	if obj.Action != nil {
		ba, err := parseBatchAction(obj.Action)
		if err != nil {
			return BatchTarget{}, false
		}
		return BatchTarget{Key: ba.CasURL, Network: true}, true
	}
	if x.networkRemote(ctx) {
		return BatchTarget{Key: "hub", Network: true}, true
	}
	return BatchTarget{Key: "embedded"}, true
}

// localRemote resolves the remote of init once.
func (x *Client) localRemote(ctx context.Context) (LocalRemote, error) {
	return x.remote.Get(ctx, func(ctx context.Context) (LocalRemote, error) {
		return x.findRemote(ctx, x.o.Git, x.init.Operation, x.init.Remote)
	})
}

// standaloneEndpoint finds the embedded store of standalone mode (action null): the directory
// xet.store / GIT_XET_STORE names, for any remote, else the store of the local remote. r is the
// local remote when the remote is on this machine (nil with xet.store set and a network remote).
// With create false, e is nil when the store does not exist yet.
func (x *Client) standaloneEndpoint(ctx context.Context, create bool) (e *endpoint, r *LocalRemote, err error) {
	if x.storeDir() != "" {
		if lr, err := x.localRemote(ctx); err == nil {
			r = &lr
		}
		e, err = x.embeddedEndpoint(ctx, LocalRemote{}, create)
		return e, r, err
	}
	lr, err := x.localRemote(ctx)
	if err != nil {
		return nil, nil, err
	}
	e, err = x.embeddedEndpoint(ctx, lr, create)
	return e, &lr, err
}

// embeddedEndpoint opens the embedded store of a local remote. With create false (downloads) a
// missing store is not created: it returns nil, and the caller falls back to plain LFS objects.
func (x *Client) embeddedEndpoint(ctx context.Context, r LocalRemote, create bool) (*endpoint, error) {
	dir := x.storeDir()
	if dir == "" {
		dir = r.StoreDir()
	}
	if !create && !isDir(dir) {
		if e, ok := x.endpoints.Peek(dir); ok {
			return e, nil
		}
		return nil, nil
	}
	return x.endpoints.Get(ctx, dir, func(ctx context.Context) (*endpoint, error) { return x.openEmbedded(ctx, dir) })
}

// openEmbedded opens the embedded store in dir, removing what writers killed mid-write left in it
// (cleanEmbeddedTemp).
func (x *Client) openEmbedded(ctx context.Context, dir string) (*endpoint, error) {
	st, err := store.Open(dir, store.Options{Log: x.o.Log, MetaCacheBytes: store.EmbeddedMetaCacheBytes})
	if err != nil {
		return nil, fmt.Errorf("opening the Xet store %s of remote %q: %w", dir, redact.URL(x.init.Remote), err)
	}
	x.cleanEmbeddedTemp(ctx, st, dir)
	local := embedded.New(st, "")
	return &endpoint{key: dir, mode: agent.ModeEmbedded, cas: local, local: local, cache: x.openCache(dir), where: dir}, nil
}

// cleanEmbeddedTemp removes the temp files and stray packs of the embedded store st that are over
// an hour old (blob.Backend.CleanTemp): an agent killed while it stored a xorb (Ctrl-C, kill -9, a
// power loss) leaves its temp file, fallocated to the whole xorb (up to 64 MiB), in the store's
// tmp/. xet-server removes its own hourly; a local remote has no process of its own, so the agents
// that open it do, else each interrupted push would keep its bytes for good. A live writer writes
// its temp file as it goes, so one an hour old is no live writer's. A failure costs only the space.
func (x *Client) cleanEmbeddedTemp(ctx context.Context, st *store.Store, dir string) {
	n, err := st.Backend().CleanTemp(ctx, time.Hour)
	switch {
	case err != nil:
		x.o.Log.Debug().Err(err).Str("store", dir).Msg("cleaning the Xet store's temp files")
	case n > 0:
		x.o.Log.Info().Int("removed", n).Str("store", dir).Msg("removed temp files of interrupted writes from the Xet store")
	}
}

// repoGitDir is the git directory of the repository the agent serves (asked once).
func (x *Client) repoGitDir(ctx context.Context) (string, error) {
	return x.gitDir.Get(ctx, func(ctx context.Context) (string, error) {
		loc, err := gitrepo.Open(x.o.Git.Dir).Location(ctx) // the rev-parse the endpoint resolver shares
		return loc.GitDir, err
	})
}

// repoLFSDir is git-lfs's storage directory of the repository (asked once): lfs.storage, or the
// lfs directory of the git directory linked work trees share.
func (x *Client) repoLFSDir(ctx context.Context) (string, error) {
	return x.lfsDir.Get(ctx, func(ctx context.Context) (string, error) {
		return gitrepo.Open(x.o.Git.Dir).LFSDir(ctx)
	})
}

// tmpDir is git-lfs's temp directory (<lfs storage>/tmp): downloads are written there so git-lfs's
// rename into <lfs storage>/objects stays on one file system, and git-lfs removes what a killed
// download left there.
func (x *Client) tmpDir(ctx context.Context) (string, error) {
	ld, err := x.repoLFSDir(ctx)
	if err != nil {
		return "", err
	}
	d := filepath.Join(ld, "tmp")
	if x.tmpMade.Load() {
		return d, nil
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("creating git-lfs's temp directory: %w", err)
	}
	x.tmpMade.Store(true)
	return d, nil
}
