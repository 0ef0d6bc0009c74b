package client

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/agent"

	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/agent/hub"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lazy"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// Hub mode: standalone (action null) with a network remote, which `install --hub` sets up for the
// Hugging Face Hub. The agent calls the Hub's LFS batch API itself: downloads ask for "basic" and
// turn a bridge URL into its Xet hash, then reconstruct through the CAS with a read token; objects
// not in Xet come by a plain verified GET. Uploads ask for "xet" and go on as in batch mode.

// hubAccess is the Hub client of a remote's LFS endpoint with the user's credential, both found on
// first use and kept (the credential resolver caches what it finds).
type hubAccess struct {
	git               Git // the repository (its config snapshot: gitrepo.Open)
	env               credentials.Env
	remote, operation string
	httpClient        *http.Client
	userAgent         string
	stall             time.Duration // the Hub's answers (hub.API.StallTimeout)
	creds             lazy.Value[*credentials.Resolver]
	client            lazy.Value[*hub.Client]
}

// credentials returns the process's credential resolver (one per process: it caches), over the
// process's config snapshot.
func (h *hubAccess) credentials(ctx context.Context) (*credentials.Resolver, error) {
	return h.creds.Get(ctx, func(ctx context.Context) (*credentials.Resolver, error) {
		c, err := credentials.New(ctx, gitrepo.Open(h.git.Dir), h.env, h.remote, h.operation)
		if err != nil {
			return nil, fmt.Errorf("remote %q: %w", redact.URL(h.remote), err)
		}
		return c, nil
	})
}

// get returns the Hub client of the remote's LFS endpoint.
func (h *hubAccess) get(ctx context.Context) (*hub.Client, error) {
	return h.client.Get(ctx, func(ctx context.Context) (*hub.Client, error) {
		r, err := h.credentials(ctx)
		if err != nil {
			return nil, err
		}
		lfsURL, err := r.LFSURL(ctx)
		if err != nil {
			return nil, fmt.Errorf("remote %q: %w", redact.URL(h.remote), err)
		}
		c, err := hub.New(lfsURL, r, h.httpClient, h.userAgent)
		if err != nil {
			return nil, fmt.Errorf("remote %q: %w", redact.URL(h.remote), err)
		}
		c.StallTimeout = h.stall
		return c, nil
	})
}

// hub returns the Hub client of the remote's LFS endpoint.
func (x *Client) hub(ctx context.Context) (*hub.Client, error) { return x.hubs.get(ctx) }

// remoteEndpoint is the LFS endpoint of init's remote for init's operation, found once per process.
func (x *Client) remoteEndpoint(ctx context.Context) (gitrepo.Endpoint, error) {
	return x.endpoint.Get(ctx, func(ctx context.Context) (gitrepo.Endpoint, error) {
		return RemoteEndpoint(ctx, x.o.Git, x.init.Operation, x.init.Remote)
	})
}

// networkRemote reports whether standalone mode must talk to a server (the Hub) rather than the
// embedded store: no xet.store, and the remote's endpoint is not on this machine. A remote whose
// endpoint cannot be found is not a network one (ResolveLocalRemote reports why).
func (x *Client) networkRemote(ctx context.Context) bool {
	if x.storeDir() != "" {
		return false
	}
	ep, err := x.remoteEndpoint(ctx)
	return err == nil && !ep.Local()
}

// hubRef is the revision the Xet token routes are asked for: GIT_XET_REF or xet.ref, else the
// current branch's upstream (uploads) or the current branch, else main. It is found once per process.
func (x *Client) hubRef(ctx context.Context) string {
	v, _ := x.ref.Get(ctx, func(ctx context.Context) (string, error) { return x.findHubRef(ctx), ctx.Err() })
	return v
}

func (x *Client) findHubRef(ctx context.Context) string {
	if v := x.o.Ref; v != "" {
		return v
	}
	repo := gitrepo.Open(x.o.Git.Dir)
	if v, _, _ := repo.Get(ctx, "xet.ref"); v != "" { // unreadable: the branch decides
		return v
	}
	head, err := x.o.Git.Run(ctx, "symbolic-ref", "-q", "HEAD")
	if err != nil || head == "" {
		return "main"
	}
	branch := strings.TrimPrefix(head, "refs/heads/")
	if x.init.Operation == "upload" {
		if m, _, _ := repo.Get(ctx, "branch."+branch+".merge"); m != "" {
			return strings.TrimPrefix(m, "refs/heads/")
		}
	}
	return branch
}

// hubTokenEndpoint is the CAS endpoint of a Hub token route, its token refreshed at the route with
// the user's credential.
func (x *Client) hubTokenEndpoint(ctx context.Context, hc *hub.Client, route, sessionID string, initial casapi.Token) *endpoint {
	ts := cas.NewRefreshingToken(initial.AccessToken, expOf(initial), func(ctx context.Context) (casapi.Token, error) {
		return hc.Token(ctx, route, sessionID)
	})
	client := cas.NewHTTP(cas.HTTPOptions{
		Endpoint: initial.CasURL, Token: ts, SessionID: sessionID,
		UserAgent: x.o.UserAgent, HTTPClient: x.o.HTTPClient, Log: x.o.Log, StallTimeout: x.o.StallTimeout,
		Retry: retryPolicy(ctx, x.o.Git),
	})
	return &endpoint{key: "hub:" + route, mode: agent.ModeHub, cas: client, where: redact.URL(initial.CasURL)}
}

// hubDownload fetches one object of a Hub remote: bridge URL → Xet reconstruction, else a plain
// verified GET. Nothing is left in tmp on failure.
func (x *Client) hubDownload(ctx context.Context, obj agent.Object, sha [32]byte, tmp string, progress func(int64)) (agent.Result, error) {
	hc, err := x.hub(ctx)
	if err != nil {
		return agent.Result{}, err
	}
	rev := x.hubRef(ctx)
	ans, err := hc.Batch(ctx, "download", []string{"basic"}, "", []lfsbatch.Object{{OID: obj.Oid, Size: obj.Size}})
	if err != nil {
		return agent.Result{}, err
	}
	if ans.Transfer != "" && ans.Transfer != "basic" {
		return agent.Result{}, fmt.Errorf("the Hub answered a download batch for %s with transfer %q, not basic", hc.Repo(), ans.Transfer)
	}
	a := ans.Objects[obj.Oid].Actions["download"]
	if a == nil || a.Href == "" {
		return agent.Result{}, fmt.Errorf("the Hub's batch answer for %s gives object %s no download action", hc.Repo(), obj.Oid)
	}
	path := handoverPath(tmp, obj.Oid)
	file, bridged, err := hub.BridgeHash(a.Href)
	if err != nil {
		return agent.Result{}, err
	}
	if !bridged {
		if err := hc.GetVerified(ctx, a.Href, a.Header, obj.Oid, obj.Size, path, progress); err != nil {
			return agent.Result{}, fmt.Errorf("downloading %s (not in Xet) from %s: %w", obj.Oid, hc.Repo(), err)
		}
		return agent.Result{Mode: agent.ModeHubLFS, Path: path, NewBytes: obj.Size}, nil
	}
	route := hc.TokenURL(false, rev)
	e, err := x.hubReadEndpoint(ctx, hc, route)
	if err != nil {
		return agent.Result{}, err
	}
	return x.xetDownload(ctx, e, file, false, obj, sha, tmp, progress)
}

// hubReadEndpoint gets the read token of route once per process and returns its CAS endpoint.
func (x *Client) hubReadEndpoint(ctx context.Context, hc *hub.Client, route string) (*endpoint, error) {
	return x.endpoints.Get(ctx, "hub:"+route, func(ctx context.Context) (*endpoint, error) {
		tok, err := hc.Token(ctx, route, "")
		if err != nil {
			return nil, err
		}
		return x.hubTokenEndpoint(ctx, hc, route, "", tok), nil
	})
}

// hubUploadAction asks the Hub's batch API for the upload of obj. A nil action: the Hub has it.
func (x *Client) hubUploadAction(ctx context.Context, obj agent.Object) (*batchAction, error) {
	acts, err := x.hubUploadActions(ctx, []agent.Object{obj})
	if err != nil || acts[0] == nil {
		return nil, err
	}
	return parseBatchAction(acts[0])
}

// hubUploadActions asks the Hub's batch API about objs (MaxBatch at a time) and returns the upload
// action of each, nil for one the Hub holds already. An error of any object fails them all (its
// own upload then reports it).
func (x *Client) hubUploadActions(ctx context.Context, objs []agent.Object) ([]*lfsbatch.Action, error) {
	hc, err := x.hub(ctx)
	if err != nil {
		return nil, err
	}
	ref := x.hubRef(ctx)
	if !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	acts := make([]*lfsbatch.Action, len(objs))
	for start := 0; start < len(objs); start += hub.MaxBatch {
		part := objs[start:min(len(objs), start+hub.MaxBatch)]
		los := make([]lfsbatch.Object, len(part))
		for i, o := range part {
			los[i] = lfsbatch.Object{OID: o.Oid, Size: o.Size}
		}
		ans, err := hc.Batch(ctx, "upload", []string{"xet"}, ref, los)
		if err != nil {
			return nil, err
		}
		for i, o := range part {
			oa := ans.Objects[o.Oid]
			if len(oa.Actions) == 0 {
				continue
			}
			if ans.Transfer != "xet" {
				return nil, fmt.Errorf("the Hub answered an upload batch for %s with transfer %q, not xet: the repository does not store new files in Xet", hc.Repo(), ans.Transfer)
			}
			if acts[start+i] = oa.Actions["upload"]; acts[start+i] == nil {
				return nil, fmt.Errorf("the Hub's batch answer for %s gives object %s actions but no upload action", hc.Repo(), o.Oid)
			}
		}
	}
	return acts, nil
}

// uploadBatchHub is UploadBatch in Hub mode: one batch call to the Hub for the objects (per
// MaxBatch); those the Hub holds are done, the others go in one session to the CAS their actions
// name (UploadBatch's network batch).
func (x *Client) uploadBatchHub(ctx context.Context, objs []agent.Object) (res []agent.Result, errs []error, err error) {
	acts, err := x.hubUploadActions(ctx, objs)
	if err != nil {
		return nil, nil, err
	}
	res, errs = make([]agent.Result, len(objs)), make([]error, len(objs))
	var send []agent.Object
	var at []int
	for i, o := range objs {
		if acts[i] == nil { // the Hub has it already
			res[i] = agent.Result{Mode: agent.ModeHub, DedupedBytes: o.Size}
			continue
		}
		o.Action = acts[i]
		send, at = append(send, o), append(at, i)
	}
	if len(send) == 0 {
		return res, errs, nil
	}
	e, err := x.uploadBatchEndpoint(ctx, send)
	if err != nil {
		return nil, nil, err
	}
	sres, serrs, err := x.uploadBatchTo(ctx, e, send)
	if err != nil {
		return nil, nil, err
	}
	for k, i := range at {
		res[i], errs[i] = sres[k], serrs[k]
		res[i].Mode = agent.ModeHub
	}
	return res, errs, nil
}

func expOf(t casapi.Token) time.Time {
	if t.Exp > 0 {
		return time.Unix(t.Exp, 0)
	}
	return time.Time{}
}

// ActionCAS returns a CAS client for a xet batch action (X-Xet-* headers, href = the token route),
// for callers outside the protocol loop (migrate), which bring their own shard cache: its token is
// renewed at href with the action's own Authorization header, or else with the user's credential
// for remote, as the agent does.
func ActionCAS(ctx context.Context, a *lfsbatch.Action, remote, operation string, o Options) (cas.Client, error) {
	ba, err := parseBatchAction(a)
	if err != nil {
		return nil, err
	}
	o = o.withDefaults()
	h := &hubAccess{git: o.Git, env: o.Credentials, remote: remote, operation: operation, httpClient: o.HTTPClient, userAgent: o.UserAgent, stall: o.StallTimeout}
	return actionCAS(ctx, o, ba, h), nil
}
