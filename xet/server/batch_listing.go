package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// Bounds of the batch listings a server holds (batchListings): a listing is a hint that saves the
// agent round trips, so one dropped early costs only those.
const (
	maxListings       = 4096    // listings held at once, the oldest dropped first
	maxListedObjects  = 200_000 // objects of all listings held (about 150 bytes each)
	batchListingRoute = "/v1/batches/"
)

// batchListings remembers, for the lifetime of their CAS token, the objects each xet batch answer
// (not in Hub mode) gave actions to, under a random id the answer's actions name
// (lfsbatch.HeaderBatchURL): GET /v1/batches/{id} with a CAS token of the same repository, user and
// scope lists them (casapi.BatchListing), so an agent handed one object of the answer can work on
// all of them at once. Bounded in count, objects and age. Safe for concurrent use.
type batchListings struct {
	mu      sync.Mutex
	byID    map[string]*batchListing
	order   []string // ids, oldest first
	objects int      // objects of the listings held
}

// batchListing is one batch answer's listing and who may read it.
type batchListing struct {
	ns    string
	user  string // the token's Subject ("" in open mode)
	write bool   // an upload listing: read with a write token only
	exp   time.Time
	body  casapi.BatchListing
}

// add keeps l under id, dropping expired listings and, beyond the bounds, the oldest ones; a
// listing larger than the bound alone is not kept.
func (b *batchListings) add(id string, l *batchListing, now time.Time) {
	n := len(l.body.Objects)
	if n > maxListedObjects {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byID == nil {
		b.byID = map[string]*batchListing{}
	}
	for len(b.order) > 0 {
		old := b.byID[b.order[0]]
		if !now.After(old.exp) && len(b.order) < maxListings && b.objects+n <= maxListedObjects {
			break
		}
		b.objects -= len(old.body.Objects)
		delete(b.byID, b.order[0])
		b.order = b.order[1:]
	}
	b.byID[id] = l
	b.order = append(b.order, id)
	b.objects += n
}

// get returns the listing id names when c may read it at now: same repository and user, a write
// token for an upload listing, not expired.
func (b *batchListings) get(id string, c Claims, now time.Time) (*batchListing, bool) {
	b.mu.Lock()
	l, ok := b.byID[id]
	b.mu.Unlock()
	if !ok || now.After(l.exp) || l.ns != c.Namespace || l.user != c.Subject || (l.write && !c.Scope.Allows(scopeWrite)) {
		return nil, false
	}
	return l, true
}

// listBatch keeps the listing of a xet batch answer resp (not the Hub's) for the answer's token and
// user; nothing when no object got an action.
func (s *Server) listBatch(g *batchGrant, id string, objs []lfsbatch.Result) {
	if g.xet == nil || g.hub || id == "" {
		return
	}
	op := "download"
	if g.write {
		op = "upload"
	}
	l := &batchListing{ns: g.ns, user: g.user, write: g.write, exp: g.xet.Exp, body: casapi.BatchListing{Operation: op}}
	for _, o := range objs {
		a := o.Actions[op]
		if a == nil {
			continue
		}
		l.body.Objects = append(l.body.Objects, casapi.BatchObject{OID: o.OID, Size: o.Size, XetHash: lfsbatch.Header(a.Header, lfsbatch.HeaderXetHash)})
	}
	if len(l.body.Objects) > 0 {
		s.listings.add(id, l, s.now())
	}
}

// handleBatchListing answers GET /v1/batches/{id}: the listing, for a token of its repository,
// user and scope; 404 to anyone else, as for an id never given, so that a listing's existence is
// not told.
func (s *Server) handleBatchListing(w http.ResponseWriter, r *http.Request, c Claims) {
	l, ok := s.listings.get(r.PathValue("id"), c, s.now())
	if !ok {
		writeError(w, http.StatusNotFound, "no such batch listing")
		return
	}
	writeJSON(w, http.StatusOK, &l.body)
}
