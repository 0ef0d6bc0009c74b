package server

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// Bounds of the batch listings a server holds (batchListings): a listing is a hint that saves the
// agent round trips, so one dropped early costs only those.
const (
	maxListings       = 4096    // listings held at once, the oldest dropped first
	maxListedObjects  = 200_000 // objects of all listings held (about 150 bytes each)
	batchListingRoute = "/v1/batches/"
)

// Bounds of the plans a download listing's answer carries (listingPlans): files of listedPlanBytes
// or more (the agent's small files are smaller, agent/client.SmallUploadBytes), past the first
// listedPlanFiles, or of more than listedPlanTerms terms are left to the per-file route.
const (
	listedPlanBytes = 1 << 20
	listedPlanFiles = 256
	listedPlanTerms = 64
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
	out := l.body
	if out.Operation == "download" {
		var err error
		if out.Plans, out.Fetches, err = s.listingPlans(r, c, out.Objects); err != nil {
			s.fail(w, r, "batch listing", err)
			return
		}
	}
	writeJSON(w, http.StatusOK, &out)
}

// listingPlans is the plans of the small files of a download listing, in c's repository as GET
// /v2/reconstructions plans them, and per xorb the ranges of all of them merged where they touch
// (no byte outside a plan's range is granted), signed as the per-file route signs them.
func (s *Server) listingPlans(r *http.Request, c Claims, objs []casapi.BatchObject) (map[string]*casapi.ReconstructionV2, map[hash.Hash][]casapi.XorbFetch, error) {
	plans := map[string]*casapi.ReconstructionV2{}
	ranges := map[hash.Hash][]casapi.XorbRange{}
	for _, o := range objs {
		if len(plans) == listedPlanFiles {
			break
		}
		file, err := hash.Parse(o.XetHash)
		if err != nil || o.Size >= listedPlanBytes || plans[o.XetHash] != nil {
			continue
		}
		p, err := s.cfg.Store.ReconstructIn(r.Context(), c.Namespace, file, nil, listedPlanTerms)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		var n int64
		for _, t := range p.Terms {
			n += int64(t.UnpackedLength)
		}
		if n != o.Size || p.OffsetIntoFirstRange != 0 {
			continue // more terms than listed plans carry
		}
		plans[o.XetHash] = s.signedPlan(r, c, p)
		for h, fetches := range p.Xorbs {
			for _, f := range fetches {
				ranges[h] = append(ranges[h], f.Ranges...)
			}
		}
	}
	if len(plans) == 0 {
		return nil, nil, nil
	}
	base := s.baseURL(r)
	fetches := make(map[hash.Hash][]casapi.XorbFetch, len(ranges))
	for h, rs := range ranges {
		rs = mergeRanges(rs)
		if url, ok := s.directURL(r, c, h); ok {
			fetches[h] = []casapi.XorbFetch{{URL: url, Ranges: rs}}
			continue
		}
		fetches[h] = s.signRanges(base, h, rs)
	}
	return plans, fetches, nil
}

// mergeRanges sorts the ranges of one xorb and merges those that overlap or touch: chunk records
// lie end to end, so touching bytes are touching chunks.
func mergeRanges(rs []casapi.XorbRange) []casapi.XorbRange {
	slices.SortFunc(rs, func(a, b casapi.XorbRange) int { return cmp.Compare(a.Bytes.Start, b.Bytes.Start) })
	var out []casapi.XorbRange
	for _, x := range rs {
		if k := len(out) - 1; k >= 0 && x.Bytes.Start <= out[k].Bytes.End+1 {
			out[k].Bytes.End = max(out[k].Bytes.End, x.Bytes.End)
			out[k].Chunks.End = max(out[k].Chunks.End, x.Chunks.End)
			continue
		}
		out = append(out, x)
	}
	return out
}
