package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/agent/hub"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/protocol"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
)

// Hub mode: standalone (action null) with a network remote, which `install --hub` sets up for the
// Hugging Face Hub. The agent calls the Hub's LFS batch API itself: downloads ask for "basic" and
// turn a bridge URL into its Xet hash, then reconstruct through the CAS with a read token; objects
// not in Xet come by a plain verified GET. Uploads ask for "xet" and go on as in batch mode.

// credentials returns the process's credential resolver (one per process: it caches), over the
// process's config snapshot.
func (x *xetTransferer) credentials(ctx context.Context) (*credentials.Resolver, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.creds == nil {
		c, err := credentials.New(ctx, gitrepo.Open(x.o.Git.Dir), credentials.EnvFrom(os.Environ()), x.init.Remote, x.init.Operation)
		if err != nil {
			return nil, fmt.Errorf("remote %q: %w", x.init.Remote, err)
		}
		x.creds = c
	}
	return x.creds, nil
}

// hub returns the Hub client of the remote's LFS endpoint.
func (x *xetTransferer) hub(ctx context.Context) (*hub.Client, error) {
	r, err := x.credentials(ctx)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.hubClient != nil {
		return x.hubClient, nil
	}
	lfsURL, err := r.LFSURL(ctx)
	if err != nil {
		return nil, fmt.Errorf("remote %q: %w", x.init.Remote, err)
	}
	c, err := hub.New(lfsURL, r, x.o.HTTPClient, x.o.UserAgent)
	if err != nil {
		return nil, fmt.Errorf("remote %q: %w", x.init.Remote, err)
	}
	x.hubClient = c
	return c, nil
}

// networkRemote reports whether standalone mode must talk to a server (the Hub) rather than the
// embedded store: no xet.store, and the remote is not on this machine.
// It is found once per process.
func (x *xetTransferer) networkRemote(ctx context.Context) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.network == nil {
		v := false
		if x.o.StoreDir == "" {
			if ep, err := RemoteEndpoint(ctx, x.o.Git, x.init.Operation, x.init.Remote); err == nil { // else ResolveLocalRemote reports it
				v = !ep.Local()
			}
		}
		x.network = &v
	}
	return *x.network
}

// hubRef is the revision the Xet token routes are asked for: GIT_XET_REF or xet.ref, else the
// current branch's upstream (uploads) or the current branch, else main. It is found once per process.
func (x *xetTransferer) hubRef(ctx context.Context) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ref == "" {
		x.ref = x.findHubRef(ctx)
	}
	return x.ref
}

func (x *xetTransferer) findHubRef(ctx context.Context) string {
	if v := os.Getenv("GIT_XET_REF"); v != "" {
		return v
	}
	repo := gitrepo.Open(x.o.Git.Dir)
	if v, _ := repo.Get("xet.ref"); v != "" {
		return v
	}
	head, err := x.o.Git.Run(ctx, "symbolic-ref", "-q", "HEAD")
	if err != nil || head == "" {
		return "main"
	}
	branch := strings.TrimPrefix(head, "refs/heads/")
	if x.init.Operation == "upload" {
		if m, _ := repo.Get("branch." + branch + ".merge"); m != "" {
			return strings.TrimPrefix(m, "refs/heads/")
		}
	}
	return branch
}

// hubTokenEndpoint is the CAS endpoint of a Hub token route, one per route per process, its token
// refreshed at the route with the user's credential.
func (x *xetTransferer) hubTokenEndpoint(hc *hub.Client, route, sessionID string, initial casapi.Token) *endpoint {
	key := "hub:" + route
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.endpoints[key]; ok {
		return e
	}
	ts := cas.NewRefreshingToken(initial.AccessToken, expOf(initial), func(ctx context.Context) (casapi.Token, error) {
		return hc.Token(ctx, route, sessionID)
	})
	client := cas.NewHTTP(cas.HTTPOptions{
		Endpoint: initial.CasURL, Token: ts, SessionID: sessionID,
		UserAgent: x.o.UserAgent, HTTPClient: x.o.HTTPClient, Log: x.o.Log, StallTimeout: stallTimeout(),
	})
	e := &endpoint{mode: "hub", cas: client, where: initial.CasURL}
	x.endpoints[key] = e
	return e
}

// hubDownload fetches one object of a Hub remote: bridge URL → Xet reconstruction, else a plain
// verified GET. Nothing is left in tmp on failure.
func (x *xetTransferer) hubDownload(ctx context.Context, obj Object, sha [32]byte, tmp string, progress func(int64)) (Result, error) {
	hc, err := x.hub(ctx)
	if err != nil {
		return Result{}, err
	}
	rev := x.hubRef(ctx)
	ans, err := hc.Batch(ctx, "download", []string{"basic"}, "", []hub.Object{{Oid: obj.Oid, Size: obj.Size}})
	if err != nil {
		return Result{}, err
	}
	if ans.Transfer != "" && ans.Transfer != "basic" {
		return Result{}, fmt.Errorf("the Hub answered a download batch for %s with transfer %q, not basic", hc.Repo(), ans.Transfer)
	}
	a := ans.Objects[obj.Oid].Actions["download"]
	if a == nil || a.Href == "" {
		return Result{}, fmt.Errorf("the Hub's batch answer for %s gives object %s no download action", hc.Repo(), obj.Oid)
	}
	path := filepath.Join(tmp, fmt.Sprintf("xet-%s-%d", obj.Oid, os.Getpid()))
	file, bridged, err := hub.BridgeHash(a.Href)
	if err != nil {
		return Result{}, err
	}
	if !bridged {
		if err := hc.GetVerified(ctx, a.Href, a.Header, obj.Oid, obj.Size, path, progress); err != nil {
			return Result{}, fmt.Errorf("downloading %s (not in Xet) from %s: %w", obj.Oid, hc.Repo(), err)
		}
		return Result{Mode: "hub-lfs", Path: path, NewBytes: obj.Size}, nil
	}
	route := hc.TokenURL(false, rev)
	e, err := x.hubReadEndpoint(ctx, hc, route)
	if err != nil {
		return Result{}, err
	}
	return x.xetDownload(ctx, e, file, obj, sha, tmp, progress)
}

// hubReadEndpoint gets the read token of route once and returns its CAS endpoint.
func (x *xetTransferer) hubReadEndpoint(ctx context.Context, hc *hub.Client, route string) (*endpoint, error) {
	x.mu.Lock()
	e, ok := x.endpoints["hub:"+route]
	x.mu.Unlock()
	if ok {
		return e, nil
	}
	tok, err := hc.Token(ctx, route, "")
	if err != nil {
		return nil, err
	}
	return x.hubTokenEndpoint(hc, route, "", tok), nil
}

// hubUploadAction asks the Hub's batch API for the upload of obj. A nil action: the Hub has it.
func (x *xetTransferer) hubUploadAction(ctx context.Context, obj Object) (*batchAction, error) {
	hc, err := x.hub(ctx)
	if err != nil {
		return nil, err
	}
	ref := x.hubRef(ctx)
	if !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	ans, err := hc.Batch(ctx, "upload", []string{"xet"}, ref, []hub.Object{{Oid: obj.Oid, Size: obj.Size}})
	if err != nil {
		return nil, err
	}
	oa := ans.Objects[obj.Oid]
	if len(oa.Actions) == 0 {
		return nil, nil
	}
	if ans.Transfer != "xet" {
		return nil, fmt.Errorf("the Hub answered an upload batch for %s with transfer %q, not xet: the repository does not store new files in Xet", hc.Repo(), ans.Transfer)
	}
	a := oa.Actions["upload"]
	if a == nil {
		return nil, fmt.Errorf("the Hub's batch answer for %s gives object %s actions but no upload action", hc.Repo(), obj.Oid)
	}
	return parseBatchAction(&protocol.Action{Href: a.Href, Header: a.Header})
}

func expOf(t casapi.Token) time.Time {
	if t.Exp > 0 {
		return time.Unix(t.Exp, 0)
	}
	return time.Time{}
}

// directIO reports whether downloads write with O_DIRECT (GIT_XET_DIRECT_IO=1). By default they go
// through the page cache: git-lfs reads every downloaded file again to hash it, and a file written
// with O_DIRECT is read back from the disk.
func directIO() bool { return os.Getenv("GIT_XET_DIRECT_IO") == "1" }

// ActionCAS returns a CAS client for a xet batch action (X-Xet-* headers, href = the token route),
// for callers outside the protocol loop (migrate): its token is renewed at href with the action's
// own Authorization header, or else with the user's credential for remote, as the agent does.
func ActionCAS(a *protocol.Action, remote, operation string, o XetOptions) (cas.Client, error) {
	ba, err := parseBatchAction(a)
	if err != nil {
		return nil, err
	}
	if o.HTTPClient == nil {
		o.HTTPClient = newHTTPClient()
	}
	if o.UserAgent == "" {
		o.UserAgent = cas.DefaultUserAgent()
	}
	x := &xetTransferer{o: o, init: Init{Remote: remote, Operation: operation}, endpoints: map[string]*endpoint{}}
	e := x.batchEndpoint(ba)
	if e.cache != nil {
		e.cache.Close() // the caller brings its own cache
	}
	return e.cas, nil
}
