package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/agent/hub"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Target is where objects migrate to.
type Target interface {
	// Missing returns the objects of objs (at most 100) the target does not hold yet; a target
	// holding one under another size is an error.
	Missing(ctx context.Context, objs []*Object) ([]*Object, error)
	// CAS is the client upload sessions and verification use (after Missing asked for at least
	// one missing object, for targets that hand out tokens then).
	CAS(ctx context.Context) (cas.Client, error)
	// Embedded: the CAS is in this process (one xorb upload in flight is enough).
	Embedded() bool
	Where() string
	Close() error
}

// embeddedTarget is the embedded Xet store of a local remote (or any store directory).
type embeddedTarget struct {
	dir   string
	st    *store.Store
	local *embedded.CAS
}

// OpenEmbedded opens (creating) the store at dir.
func OpenEmbedded(dir string, log zerolog.Logger) (Target, error) {
	st, err := store.Open(dir, store.Options{Log: log, MetaCacheBytes: store.EmbeddedMetaCacheBytes})
	if err != nil {
		return nil, fmt.Errorf("opening the Xet store %s: %w", dir, err)
	}
	return &embeddedTarget{dir: dir, st: st, local: embedded.New(st, "")}, nil
}

func (t *embeddedTarget) Missing(ctx context.Context, objs []*Object) ([]*Object, error) {
	var out []*Object
	for _, o := range objs {
		sha, err := hash.ParseSHA256(o.Oid)
		if err != nil {
			return nil, err
		}
		_, size, err := t.local.LookupSHA256(ctx, sha)
		switch {
		case errors.Is(err, cas.ErrNotFound) || errors.Is(err, store.ErrNotFound):
			out = append(out, o)
		case err != nil:
			return nil, err
		case int64(size) != o.Size:
			return nil, fmt.Errorf("the Xet store %s holds %s with %d bytes, the pointer says %d", t.dir, o.Oid, size, o.Size)
		}
	}
	return out, nil
}

func (t *embeddedTarget) CAS(context.Context) (cas.Client, error) { return t.local, nil }
func (t *embeddedTarget) Embedded() bool                          { return true }
func (t *embeddedTarget) Where() string                           { return t.dir }
func (t *embeddedTarget) Close() error                            { return t.st.Close() }

// batchTarget is an LFS server offering the xet transfer (xet-server, the Hub): the batch API says
// which objects it lacks and hands out the CAS, as for git push; credentials as git-lfs's.
type batchTarget struct {
	remote string
	lfsURL string
	api    *hub.API
	opts   client.Options
	client atomic.Pointer[cas.Client]
}

// OpenBatch returns the target at an LFS URL (…/info/lfs), reached with the user's credential for
// that URL (as git push finds it: URL user info, netrc, ssh, git credential, Hub tokens), with the
// configuration of repo and the credential sources of o.
func OpenBatch(ctx context.Context, repo *gitrepo.Repo, lfsURL, remote string, o client.Options) (Target, error) {
	creds, err := credentials.NewForURL(ctx, repo, o.Credentials, lfsURL, "upload")
	if err != nil {
		return nil, err
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = httpClient(repo, o.Credentials.OS, o.Warnings, o.StallTimeout)
		o.HTTPClient = hc // the CAS of the target's actions too
	}
	api := hub.NewAPI(creds, hc, cas.DefaultUserAgent())
	api.StallTimeout = o.StallTimeout
	return &batchTarget{remote: remote, lfsURL: strings.TrimSuffix(lfsURL, "/"), api: api, opts: o}, nil
}

// batch posts an LFS batch request to lfsURL, anonymous first and with the credential after a 401,
// as git-lfs does for a server it has not authenticated to yet.
func batch(ctx context.Context, api *hub.API, lfsURL, op string, transfers []string, objs []*Object) (*lfsbatch.Response, error) {
	body := lfsbatch.Request{Operation: op, Transfers: transfers, HashAlgo: "sha256"}
	for _, o := range objs {
		body.Objects = append(body.Objects, lfsbatch.Object{OID: o.Oid, Size: o.Size})
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	answer, err := api.DoRead(ctx, hub.Request{Method: http.MethodPost, URL: lfsURL + "/objects/batch", Body: b, LFS: true,
		Anonymous: true,
		Header:    map[string]string{"Accept": "application/vnd.git-lfs+json", "Content-Type": "application/vnd.git-lfs+json"}}, 16<<20)
	if err != nil {
		return nil, fmt.Errorf("LFS batch %s: %w", op, err)
	}
	var a lfsbatch.Response
	if err := json.Unmarshal(answer, &a); err != nil {
		return nil, fmt.Errorf("LFS batch %s at %s: the answer is not JSON: %w", op, hub.Where(lfsURL), err)
	}
	return &a, nil
}

func (t *batchTarget) Missing(ctx context.Context, objs []*Object) ([]*Object, error) {
	a, err := batch(ctx, t.api, t.lfsURL, "upload", []string{"xet"}, objs)
	if err != nil {
		return nil, err
	}
	byOid := map[string]*Object{}
	for _, o := range objs {
		byOid[o.Oid] = o
	}
	var out []*Object
	for _, r := range a.Objects {
		o, ok := byOid[r.OID]
		switch {
		case !ok:
			return nil, fmt.Errorf("LFS batch at %s answered for object %q, not asked for", hub.Where(t.lfsURL), r.OID)
		case r.Error != nil:
			return nil, fmt.Errorf("LFS batch at %s: object %s: %d %s", hub.Where(t.lfsURL), redact.Printable(r.OID), r.Error.Code, redact.Printable(r.Error.Message))
		case len(r.Actions) == 0:
			continue // stored
		case a.Transfer != "xet":
			return nil, fmt.Errorf("the LFS server at %s does not offer the xet transfer (it answered %q): it cannot be a migration target", hub.Where(t.lfsURL), a.Transfer)
		}
		if t.client.Load() == nil && r.Actions["upload"] != nil {
			c, err := client.ActionCAS(ctx, r.Actions["upload"], t.remote, "upload", t.opts)
			if err != nil {
				return nil, err
			}
			t.client.Store(&c)
		}
		out = append(out, o)
	}
	return out, nil
}

func (t *batchTarget) CAS(context.Context) (cas.Client, error) {
	if c := t.client.Load(); c != nil {
		return *c, nil
	}
	return nil, fmt.Errorf("the LFS server at %s gave no xet action", hub.Where(t.lfsURL))
}
func (t *batchTarget) Embedded() bool { return false }
func (t *batchTarget) Where() string  { return hub.Where(t.lfsURL) }
func (t *batchTarget) Close() error   { return nil }

// countingCAS counts the bytes of the xorbs and shards a session stores.
type countingCAS struct {
	cas.Client
	xorbs, shards atomic.Int64
	puts          atomic.Int64
}

func (c *countingCAS) PutXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	n := int64(x.Size())
	ins, err := c.Client.PutXorb(ctx, x)
	if err == nil && ins {
		c.xorbs.Add(n)
	}
	if err == nil && c.puts.Add(1) == 2 {
		crashPoint("xorb")
	}
	return ins, err
}

func (c *countingCAS) PutShard(ctx context.Context, body []byte) error {
	err := c.Client.PutShard(ctx, body)
	if err == nil {
		c.shards.Add(int64(len(body)))
	}
	return err
}
