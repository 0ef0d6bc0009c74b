// Package webui is xet-server's read-only web view (/ui/ on the main port): the repositories a
// viewer may read, with what they hold and cost, and per repository its objects in the order they
// were registered and a chart of logical against stored bytes over time. Pages are rendered on the
// server (html/template, inline SVG) and carry no script: the Content-Security-Policy forbids any.
//
// The package renders; it does not authenticate. The server (xet/server, ui.go) checks the
// viewer's credentials as it does for the repositories' LFS routes and hands each page a Viewer
// saying which repositories it may read. A repository the viewer may not read is answered exactly
// as one that does not exist, and nothing of it (name, counts, sizes) reaches a page; an owner's
// total, which sums repositories, is shown only to a viewer who may read every repository.
//
// The numbers are the store's own (store.RepoUsage, the code of `xet-server stats`), kept per
// repository while its entries do not change (they are only ever added) and for at most
// Config.MemoTTL: reading a repository's usage reads every entry of it.
package webui

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// Source is what the view reads; *store.Store is one.
type Source interface {
	Repositories(ctx context.Context) ([]store.Repository, error)
	RepoObjects(ctx context.Context, ns string) (*store.RepoObjects, error)
	RepoUsage(ctx context.Context, ns string) (store.Usage, error)
	RepoUsageOf(ctx context.Context, o *store.RepoObjects) (store.Usage, error)
	OwnerStoredBytes(ctx context.Context, owner string) (uint64, error)
	LookupSHA256(ctx context.Context, ns string, sha hash.Hash) (hash.Hash, uint64, error)
}

var _ Source = (*store.Store)(nil)

// Limits are the quotas that apply to a repository: its own and its owner's (store.Owner), in
// bytes, 0 for none.
type Limits struct {
	Repo       int64
	Owner      string
	OwnerLimit int64
}

// Config configures a View.
type Config struct {
	Source Source
	// Quota gives the limits of a repository; nil: no quotas.
	Quota func(ns string) Limits
	// PageSize is how many objects a repository page lists (default 100).
	PageSize int
	// MemoTTL bounds how long a usage read is reused while the repository's entries do not change
	// (default 1 minute: what gc does to a repository's xorbs shows within it).
	MemoTTL time.Duration
	Log     zerolog.Logger
}

// Viewer is who looks at a page, as the server authenticated it.
type Viewer struct {
	// Name is the user ("" for an open server).
	Name string
	// CanRead reports whether the viewer may read repository ns.
	CanRead func(ns string) bool
	// ReadsAll: the viewer may read every repository (an open server, a user with no repository
	// patterns), so sums over repositories (an owner's quota use) may be shown.
	ReadsAll bool
}

// View serves the pages. Safe for concurrent use.
type View struct {
	cfg   Config
	memo  *memo
	pages chan struct{} // a slot per page being built
}

// New builds a View.
func New(cfg Config) *View {
	if cfg.PageSize <= 0 {
		cfg.PageSize = 100
	}
	if cfg.MemoTTL <= 0 {
		cfg.MemoTTL = time.Minute
	}
	if cfg.Quota == nil {
		cfg.Quota = func(string) Limits { return Limits{} }
	}
	return &View{cfg: cfg, memo: newMemo(cfg.MemoTTL, memoReads), pages: make(chan struct{}, pagesAtOnce)}
}

// memoReads bounds the usage reads running at once: each reads every entry of a repository.
const memoReads = 2

// pagesAtOnce bounds the pages built at once: a repository page holds the names of all the
// repository's entries while it is built (about 200 bytes each, three or four per object).
const pagesAtOnce = 4

// slot waits for a page slot (false: the viewer left first); the caller calls done.
func (v *View) slot(r *http.Request) (done func(), ok bool) {
	select {
	case v.pages <- struct{}{}:
		return func() { <-v.pages }, true
	case <-r.Context().Done():
		return nil, false
	}
}

// SetHeaders sets what every answer of the web view carries, refusals included: no caching
// (pages show what a credential may read), a policy that allows no script, no frame, no form and
// no resource but the page's own style, and no Referer sent from it.
func SetHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// usage is repository ns's usage, from the memo while its entry count is the same.
func (v *View) usage(ctx context.Context, ns string, entries int) (store.Usage, error) {
	return v.memo.usage(ctx, ns, entries, func(ctx context.Context) (store.Usage, error) {
		return v.cfg.Source.RepoUsage(ctx, ns)
	})
}

// usageOf is usage for a page that listed the repository (objs): the read counts that listing's
// entries instead of listing them again.
func (v *View) usageOf(ctx context.Context, ns string, objs *store.RepoObjects) (store.Usage, error) {
	return v.memo.usage(ctx, ns, objs.Entries, func(ctx context.Context) (store.Usage, error) {
		return v.cfg.Source.RepoUsageOf(ctx, objs)
	})
}

// ownerUsed is what owner's repositories take together (store.OwnerStoredBytes).
func (v *View) ownerUsed(ctx context.Context, owner string) (uint64, error) {
	u, err := v.memo.usage(ctx, "user:"+owner, -1, func(ctx context.Context) (store.Usage, error) {
		b, err := v.cfg.Source.OwnerStoredBytes(ctx, owner)
		return store.Usage{Stored: b}, err
	})
	return u.Stored, err
}

// render answers status with template name over data.
func (v *View) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		v.cfg.Log.Error().Err(err).Str("page", name).Msg("web view: rendering a page")
		status, b = http.StatusInternalServerError, *bytes.NewBufferString("internal error\n")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	SetHeaders(w)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}

// notFound answers a repository the viewer may not read exactly as one that does not exist, and
// names neither.
func (v *View) notFound(w http.ResponseWriter, r *http.Request, who Viewer) {
	v.render(w, r, http.StatusNotFound, "error", errorPage{Viewer: who.Name, Status: http.StatusNotFound,
		Message: "No such repository, or not one you may read."})
}

// failed answers a failure to read the store (logged; the page says no more).
func (v *View) failed(w http.ResponseWriter, r *http.Request, who Viewer, err error) {
	if errors.Is(err, context.Canceled) {
		return // the viewer left
	}
	v.cfg.Log.Error().Err(err).Str("path", r.URL.Path).Msg("web view: reading the store")
	v.render(w, r, http.StatusInternalServerError, "error", errorPage{Viewer: who.Name, Status: http.StatusInternalServerError,
		Message: "The store could not be read; the server's log says why."})
}

// badRequest answers a malformed query.
func (v *View) badRequest(w http.ResponseWriter, r *http.Request, who Viewer, msg string) {
	v.render(w, r, http.StatusBadRequest, "error", errorPage{Viewer: who.Name, Status: http.StatusBadRequest, Message: msg})
}

type errorPage struct {
	Viewer  string
	Status  int
	Message string
}
