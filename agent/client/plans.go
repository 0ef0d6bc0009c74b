package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"golang.org/x/sync/errgroup"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/hub"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lazy"
	"github.com/git-xet-transfer/git-xet-transfer/localshards"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// Plans is what `git xet-transfer log` asks of a remote: where the Xet file of each LFS object is,
// its reconstruction plan, and the chunk sizes the shard cache beside that CAS knows. It reaches
// the remote as a download of it does (the same endpoint resolution, credentials and CAS clients:
// the embedded store of a local remote or of xet.store, an LFS server's xet batch action, the Hub's
// bridge URL and read token) and never fetches object data. Safe for concurrent use; Close it.
type Plans struct {
	x *Client
	// caches are the shard caches of endpoints that keep none for downloads (the Hub's read
	// endpoint), opened on first use and closed by Close.
	caches lazy.Map[string, *localshards.Cache]
	api    lazy.Value[*hub.API] // the remote's LFS batch API (network remotes)
	lfsURL lazy.Value[string]
}

// ObjectState says where a remote keeps an LFS object.
type ObjectState int

const (
	InXet    ObjectState = iota // a Xet file of the remote's CAS (Located.File)
	Missing                     // the remote does not have it (not pushed yet, or another remote's)
	PlainLFS                    // the remote keeps it as a plain LFS object, not in Xet
	Failed                      // the remote answered an error for it, or could not be asked (Located.Err)
)

func (s ObjectState) String() string {
	return [...]string{"xet", "missing", "lfs", "error"}[s]
}

// Located is where one LFS object is.
type Located struct {
	State ObjectState
	File  hash.Hash // InXet: its Xet file hash
	Err   error     // Failed
	// Where names the CAS (its URL, or the store's directory): objects of one Where share the
	// shard cache ChunkSizes reads.
	Where string
	e     *endpoint
}

// NewPlans returns the Plans of remote (a remote's name, or a URL or path) of the repository o.Git
// names. Nothing is resolved before the first Locate.
func NewPlans(ctx context.Context, o Options, remote string) (*Plans, error) {
	return &Plans{x: Open(o, agent.Init{Operation: "download", Remote: remote, ConcurrentTransfers: 1}, nil)}, nil
}

// Close closes the stores and shard caches opened.
func (p *Plans) Close() error {
	errs := []error{p.x.Close()}
	for _, c := range p.caches.Found() {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Locate finds where the remote keeps each of objs (the result in the same order). An object's
// own trouble is its Located's (Failed, Err); the error is the context's, or says that the remote
// has no LFS endpoint to ask.
func (p *Plans) Locate(ctx context.Context, objs []lfsbatch.Object) ([]Located, error) {
	if p.x.storeDir() == "" {
		ep, err := p.x.remoteEndpoint(ctx)
		if err == nil && (ep.Url == "" || ep.Url == "<unknown>") {
			err = fmt.Errorf("remote %q has no LFS endpoint (no such remote, and no lfs.url): name one with --remote", p.x.init.Remote)
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]Located, len(objs))
	if p.x.networkRemote(ctx) {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(4)
		for i := 0; i < len(objs); i += hub.MaxBatch {
			j := min(i+hub.MaxBatch, len(objs))
			g.Go(func() error { p.locateBatch(gctx, objs[i:j], out[i:j]); return nil })
		}
		_ = g.Wait()
	} else {
		p.locateLocal(ctx, objs, out)
	}
	return out, ctx.Err()
}

// locateLocal looks objs up in the embedded store (standalone mode), then among the remote's
// plain LFS objects.
func (p *Plans) locateLocal(ctx context.Context, objs []lfsbatch.Object, out []Located) {
	e, r, err := p.x.standaloneEndpoint(ctx, false)
	for i, o := range objs {
		switch {
		case err != nil:
			out[i] = Located{State: Failed, Err: err}
		case e != nil:
			out[i] = p.lookupLocal(ctx, e, r, o)
		default:
			out[i] = plainOrMissing(r, o)
		}
	}
}

func (p *Plans) lookupLocal(ctx context.Context, e *endpoint, r *LocalRemote, o lfsbatch.Object) Located {
	sha, err := hash.ParseSHA256(o.OID)
	if err != nil {
		return Located{State: Failed, Err: fmt.Errorf("oid %q: %w", o.OID, err)}
	}
	file, size, err := e.local.LookupSHA256(ctx, sha)
	switch {
	case err == nil && int64(size) != o.Size:
		return Located{State: Failed, Err: fmt.Errorf("the Xet store %s maps %s to Xet file %s of %d bytes, the pointer says %d", e.where, o.OID, file, size, o.Size)}
	case err == nil:
		return Located{State: InXet, File: file, Where: e.where, e: e}
	case errors.Is(err, cas.ErrNotFound) || errors.Is(err, store.ErrNotFound):
		return plainOrMissing(r, o)
	default:
		return Located{State: Failed, Err: fmt.Errorf("looking up %s in the Xet store %s: %w", o.OID, e.where, err)}
	}
}

// plainOrMissing: a local remote that keeps o as a plain LFS file has it outside Xet.
func plainOrMissing(r *LocalRemote, o lfsbatch.Object) Located {
	if r != nil {
		if fi, err := os.Stat(r.LFSObject(o.OID)); err == nil && fi.Mode().IsRegular() {
			return Located{State: PlainLFS}
		}
	}
	return Located{State: Missing}
}

// batchAPI is the LFS batch API of the remote's endpoint, with the user's credential.
func (p *Plans) batchAPI(ctx context.Context) (*hub.API, string, error) {
	api, err := p.api.Get(ctx, func(ctx context.Context) (*hub.API, error) {
		r, err := p.x.hubs.credentials(ctx)
		if err != nil {
			return nil, err
		}
		api := hub.NewAPI(r, p.x.o.HTTPClient, p.x.o.UserAgent)
		api.StallTimeout = p.x.o.StallTimeout
		return api, nil
	})
	if err != nil {
		return nil, "", err
	}
	u, err := p.lfsURL.Get(ctx, func(ctx context.Context) (string, error) {
		r, err := p.x.hubs.credentials(ctx)
		if err != nil {
			return "", err
		}
		return r.LFSURL(ctx)
	})
	return api, u, err
}

// locateBatch asks the remote's LFS server about objs in one batch request, offering xet as the
// agent's git-lfs does: a xet action names the Xet file (X-Xet-Hash) and its CAS; a Hub answers
// downloads with bridge URLs, which name the Xet file, planned through the Hub's read token.
func (p *Plans) locateBatch(ctx context.Context, objs []lfsbatch.Object, out []Located) {
	api, u, err := p.batchAPI(ctx)
	var ans *hub.BatchAnswer
	if err == nil {
		ans, err = api.BatchEach(ctx, u, "download", []string{"xet", "basic"}, objs)
	}
	for i, o := range objs {
		if err != nil {
			out[i] = Located{State: Failed, Err: err}
			continue
		}
		out[i] = p.fromAnswer(ctx, ans.Transfer, ans.Objects[o.OID])
	}
}

// fromAnswer reads one object's batch answer.
func (p *Plans) fromAnswer(ctx context.Context, transfer string, r lfsbatch.Result) Located {
	if r.Error != nil {
		if r.Error.Code == http.StatusNotFound {
			return Located{State: Missing}
		}
		return Located{State: Failed, Err: fmt.Errorf("the LFS server answered error %d: %s", r.Error.Code, r.Error.Message)}
	}
	a := r.Actions["download"]
	if a == nil {
		return Located{State: Failed, Err: fmt.Errorf("the LFS server's answer gives no download action")}
	}
	if transfer == "xet" {
		ba, err := parseBatchAction(a)
		if err != nil {
			return Located{State: Failed, Err: err}
		}
		file, err := ba.File()
		if err != nil {
			return Located{State: Failed, Err: err}
		}
		e := p.x.batchEndpoint(ctx, ba)
		return Located{State: InXet, File: file, Where: e.where, e: e}
	}
	file, bridged, err := hub.BridgeHash(a.Href)
	switch {
	case err != nil:
		return Located{State: Failed, Err: err}
	case !bridged:
		return Located{State: PlainLFS}
	}
	hc, err := p.x.hub(ctx)
	if err != nil {
		return Located{State: Failed, Err: err}
	}
	e, err := p.x.hubReadEndpoint(ctx, hc, hc.TokenURL(false, p.x.hubRef(ctx)))
	if err != nil {
		return Located{State: Failed, Err: err}
	}
	return Located{State: InXet, File: file, Where: e.where, e: e}
}

// Plan returns the reconstruction plan of the whole file l names (InXet only): terms, no data.
func (p *Plans) Plan(ctx context.Context, l Located) (*casapi.ReconstructionV2, error) {
	if l.State != InXet || l.e == nil {
		return nil, fmt.Errorf("no Xet file to plan (%s)", l.State)
	}
	return l.e.cas.Reconstruct(ctx, l.File, nil)
}

// ChunkSizes returns the raw (unpacked) size of each chunk of the xorbs it knows among xorbs, by
// xorb, as the shard cache of l's CAS lists them (the shards of uploads from this machine, and
// dedupe answers), and for the embedded store also as the xorb's footer says (read by the store
// to plan anyway). Xorbs neither knows are left out; their chunk sizes are not in any plan.
func (p *Plans) ChunkSizes(ctx context.Context, l Located, xorbs []hash.Hash) (map[hash.Hash][]uint32, error) {
	out := map[hash.Hash][]uint32{}
	if l.e == nil {
		return out, nil
	}
	if c := p.cacheOf(ctx, l.e); c != nil {
		known, err := c.Xorbs(xorbs)
		if err != nil {
			return nil, fmt.Errorf("reading the shard cache of %s: %w", l.Where, err)
		}
		for x, chunks := range known {
			sizes := make([]uint32, len(chunks))
			for i, ch := range chunks {
				sizes[i] = ch.RawLen
			}
			out[x] = sizes
		}
	}
	if l.e.local == nil {
		return out, nil
	}
	for _, x := range xorbs {
		if _, ok := out[x]; ok {
			continue
		}
		f, err := l.e.local.XorbFooter(ctx, x, casapi.XorbFetch{})
		if err != nil {
			continue // the plan's lengths are all there is
		}
		if sizes := rawSizes(f.RawEnds); len(sizes) > 0 {
			out[x] = sizes
		}
	}
	return out, nil
}

// rawSizes turns a footer's cumulative raw ends into chunk sizes (nil when they do not rise).
func rawSizes(ends []uint32) []uint32 {
	sizes := make([]uint32, len(ends))
	prev := uint32(0)
	for i, e := range ends {
		if e < prev {
			return nil
		}
		sizes[i], prev = e-prev, e
	}
	return sizes
}

// cacheOf is the shard cache beside e's CAS: e's own, else one opened for its name.
func (p *Plans) cacheOf(ctx context.Context, e *endpoint) *localshards.Cache {
	if e.cache != nil {
		return e.cache
	}
	c, _ := p.caches.Get(ctx, e.where, func(context.Context) (*localshards.Cache, error) { return p.x.openCache(e.where), nil })
	return c
}
