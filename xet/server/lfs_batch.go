package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

const lfsInfix = "/info/lfs/"

// maxBatchObjects bounds the objects of one batch request (git-lfs sends at most 100).
const maxBatchObjects = 1000

// handleRepoRoute dispatches /{repo}[.git]/info/lfs/{objects/batch | objects/{oid} | verify}.
func (s *Server) handleRepoRoute(w http.ResponseWriter, r *http.Request) {
	i := strings.Index(r.URL.Path, lfsInfix)
	if i < 1 {
		writeError(w, http.StatusNotFound, "no such route")
		return
	}
	ns, ok := repoNamespace(strings.TrimSuffix(r.URL.Path[1:i], ".git"))
	if !ok {
		writeLFSError(w, http.StatusNotFound, "bad repository name")
		return
	}
	rest := r.URL.Path[i+len(lfsInfix):]
	switch {
	case rest == "objects/batch" && r.Method == http.MethodPost:
		noteRoute(r, "/{repo}/info/lfs/objects/batch")
		s.handleBatch(w, r, ns)
	case rest == "verify" && r.Method == http.MethodPost:
		noteRoute(r, "/{repo}/info/lfs/verify")
		s.handleVerify(w, r, ns)
	case strings.HasPrefix(rest, "objects/") && strings.Count(rest, "/") == 1:
		noteRoute(r, "/{repo}/info/lfs/objects/{oid}")
		oid := rest[len("objects/"):]
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			s.handleObjectGet(w, r, ns, oid)
		case http.MethodPut:
			s.handleObjectPut(w, r, ns, oid)
		default:
			w.Header().Set("Allow", "GET, HEAD, PUT")
			writeLFSError(w, http.StatusMethodNotAllowed, "method not allowed")
		}
	default:
		writeLFSError(w, http.StatusNotFound, "no such LFS route")
	}
}

// handleBatch answers POST /{repo}.git/info/lfs/objects/batch. With "xet" among the request's
// transfers it answers "transfer":"xet" the Hub's way: actions whose href is the token refresh route
// and whose headers carry the CAS URL, a CAS token (write for uploads, read for downloads), its expiry
// and a session id, plus X-Xet-Hash on downloads. Otherwise it answers "basic" with hrefs to this
// server's object routes (the bridge). Objects the repository already has get no upload actions;
// unknown objects for download get a per-object 404 error.
func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request, ns string) {
	// Credentials first: nothing of the body is read for a caller without them.
	who, ok := s.authBatch(w, r, ns)
	if !ok {
		return
	}
	req, write, ok := s.decodeBatch(w, r)
	if !ok {
		return
	}
	// On the Hub a reader may push to a pull-request ref.
	needWrite := write && !(s.cfg.Hub != nil && req.Ref != nil && strings.HasPrefix(req.Ref.Name, "refs/pr/"))
	if needWrite && !who.write {
		s.denyWrite(w, ns, who)
		return
	}
	g, err := s.grant(r, ns, who, req, write)
	if err != nil {
		s.failLFS(w, r, "batch", err)
		return
	}
	resp := lfsbatch.Response{Transfer: "basic", HashAlgo: "sha256", Objects: make([]lfsbatch.Result, 0, len(req.Objects))}
	if g.useXet {
		resp.Transfer = "xet"
	}
	for _, o := range req.Objects {
		res, err := s.answerObject(r.Context(), g, o)
		if err != nil {
			s.failLFS(w, r, "batch lookup", err)
			return
		}
		resp.Objects = append(resp.Objects, res)
	}
	// A batch that asks for no upload (every object stored already: a push of what the repository
	// has) adds nothing, and is answered at or over the quota too.
	if n, total, largest := uploadBytes(resp.Objects); write && n > 0 && !s.withinQuota(w, r, ns, total, largest) {
		return
	}
	s.listBatch(g, g.listingID, resp.Objects)
	w.Header().Set("Content-Type", contentTypeLFS)
	w.WriteHeader(http.StatusOK)
	_ = casapi.Encode(w, resp)
}

// decodeBatch reads and checks a batch request (size, operation, hash algorithm, object count),
// answering the client itself when it is refused (ok false). write: an upload.
func (s *Server) decodeBatch(w http.ResponseWriter, r *http.Request) (req *lfsbatch.Request, write, ok bool) {
	req = &lfsbatch.Request{}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.Limits.JSON))
	if err := dec.Decode(req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeLFSError(w, http.StatusRequestEntityTooLarge, "batch request too large")
			return nil, false, false
		}
		writeLFSError(w, http.StatusBadRequest, "malformed batch request: "+err.Error())
		return nil, false, false
	}
	switch req.Operation {
	case "upload":
		write = true
	case "download":
	default:
		writeLFSError(w, http.StatusUnprocessableEntity, fmt.Sprintf("operation %q is neither upload nor download", req.Operation))
		return nil, false, false
	}
	if !isSHA256Algo(req.HashAlgo) {
		writeLFSError(w, http.StatusConflict, fmt.Sprintf("hash algorithm %q not supported (sha256 only)", req.HashAlgo))
		return nil, false, false
	}
	if len(req.Objects) > maxBatchObjects {
		writeLFSError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%d objects in one batch, at most %d", len(req.Objects), maxBatchObjects))
		return nil, false, false
	}
	return req, write, true
}

// batchGrant is what every object of one batch answer shares: the transfer, the tokens and the
// hrefs.
type batchGrant struct {
	ns           string
	write        bool
	useXet       bool
	tok          string              // bearer token of basic actions
	base         string              // this server's URL
	xet          *lfsbatch.XetAction // what xet actions say (href: the token route); nil for basic
	expiresIn    int64               // basic actions: their bearer token's lifetime
	xetExpiresIn int64               // xet actions: the refresh credential's lifetime
	hub          bool                // Hub mode: bridge and CDN URLs for downloads
	user         string              // who asked (the tokens' Subject)
	listingID    string              // the batch listing the xet actions name (batch_listing.go); "" for none
}

// uploadBytes is how many objects a batch answer asks the client to upload, their size, and the
// size of the largest of them.
func uploadBytes(objs []lfsbatch.Result) (n int, total, largest int64) {
	for _, o := range objs {
		if o.Actions["upload"] != nil {
			n++
			total += max(o.Size, 0)
			largest = max(largest, o.Size)
		}
	}
	return n, total, largest
}

// grant issues the batch's tokens for who: a CAS token for ns and the operation's scope, and for
// xet actions the headers naming the CAS and, with authentication, a refresh credential.
func (s *Server) grant(r *http.Request, ns string, who principal, req *lfsbatch.Request, write bool) (*batchGrant, error) {
	scope := scopeRead
	if write {
		scope = scopeWrite
	}
	tok, exp, err := s.mint(Claims{Namespace: ns, Scope: scope}, who, s.cfg.TokenTTL)
	if err != nil {
		return nil, err
	}
	rev := "main"
	if req.Ref != nil && req.Ref.Name != "" {
		rev = strings.TrimPrefix(req.Ref.Name, "refs/heads/")
	}
	hub := s.cfg.Hub != nil
	g := &batchGrant{ns: ns, write: write, hub: hub, tok: tok, base: s.baseURL(r), user: who.name,
		// The Hub answers downloads with basic even to clients that offer xet.
		useXet:    slices.Contains(req.Transfers, "xet") && (write || !hub),
		expiresIn: secondsUntil(s.now(), exp),
	}
	if !g.useXet {
		return g, nil
	}
	g.xet = &lfsbatch.XetAction{CasURL: g.base, Token: tok, Exp: exp, SessionID: newSessionID(),
		Href: tokenRoute(g.base, ns, scope, rev), Auth: map[string]string{}}
	if hub {
		g.xetExpiresIn = 0 // the Hub's xet actions carry only the four X-Xet-* headers
		return g, nil
	}
	// Every shard is checked against its files' content (store.PutShard), so the agent need not
	// hash them too.
	g.xet.VerifiesSHA256 = true
	// Our extension: the answer's objects can be listed at once (batch_listing.go).
	g.listingID = newSessionID()
	g.xet.BatchURL = g.base + batchListingRoute + g.listingID
	// A xet action stays usable while its token can be renewed at href (the agent does it itself),
	// so git-lfs must not drop the action when the first CAS token expires.
	g.xetExpiresIn = int64(s.cfg.RefreshTTL / time.Second)
	if s.Open() {
		return g, nil // href renews a token without a credential
	}
	// The agent calls href with the action's other headers when its CAS token nears expiry: give
	// it a refresh credential for this repository and scope.
	rt, rexp, err := s.mint(Claims{Namespace: ns, Scope: scope, Refresh: true}, who, s.cfg.RefreshTTL)
	if err != nil {
		return nil, err
	}
	g.xet.Auth["Authorization"] = "Bearer " + rt
	g.xetExpiresIn = secondsUntil(s.now(), rexp)
	return g, nil
}

// secondsUntil is an LFS action's expires_in for an expiry at exp.
func secondsUntil(now, exp time.Time) int64 {
	return max(0, int64(exp.Sub(now)/time.Second))
}

// answerObject answers one object of a batch: its actions, none when an upload is already stored,
// or its error. An error returned is the store's, not the object's.
func (s *Server) answerObject(ctx context.Context, g *batchGrant, o lfsbatch.Object) (lfsbatch.Result, error) {
	res := lfsbatch.Result{OID: o.OID, Size: o.Size}
	sha, err := hash.ParseSHA256(o.OID)
	if err != nil || o.Size < 0 { // err: not a lowercase SHA-256 (hash.ParseSHA256)
		res.Error = &lfsbatch.ObjectError{Code: http.StatusUnprocessableEntity, Message: "invalid oid or size"}
		return res, nil
	}
	// An upload is skipped only for a verified mapping: an unverified one (written by an older
	// store, possibly wrong) is repaired by letting the upload through. A download takes either,
	// and says which (lfsbatch.HeaderSHA256Verified).
	file, size, err := s.cfg.Store.LookupVerifiedSHA256(ctx, g.ns, sha)
	verified := err == nil
	if !g.write && errors.Is(err, store.ErrNotFound) {
		file, size, err = s.cfg.Store.LookupSHA256(ctx, g.ns, sha)
	}
	known := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return res, err
	}
	if known && g.write {
		// "Already stored" only when its data is: a file whose xorb was moved aside as damaged
		// (fsck --repair) is asked for again, which is how pushing it repairs the store.
		if known, err = s.cfg.Store.FileComplete(ctx, file); err != nil {
			return res, err
		}
	}
	if g.hub {
		return s.answerHubObject(g, o, res, file, size, known), nil
	}
	objectURL := g.base + "/" + g.ns + ".git/info/lfs/objects/" + o.OID
	switch {
	case g.write && known:
		if int64(size) != o.Size {
			// The stored size is not said: the client sent only its own.
			res.Error = &lfsbatch.ObjectError{Code: http.StatusUnprocessableEntity, Message: fmt.Sprintf("object exists with another size than %d", o.Size)}
		}
		// Already stored: no actions, git-lfs skips it.
	case g.write && g.useXet:
		res.Authenticated = true
		res.Actions = map[string]*lfsbatch.Action{"upload": g.xet.Action(g.xetExpiresIn)}
	case g.write:
		hdr := map[string]string{"Authorization": "Bearer " + g.tok}
		res.Authenticated = true
		res.Actions = map[string]*lfsbatch.Action{
			"upload": {Href: objectURL, Header: hdr, ExpiresIn: g.expiresIn},
			"verify": {Href: g.base + "/" + g.ns + ".git/info/lfs/verify", Header: hdr, ExpiresIn: g.expiresIn},
		}
	case !known:
		res.Error = &lfsbatch.ObjectError{Code: http.StatusNotFound, Message: "object does not exist"}
	case g.useXet:
		x := *g.xet
		x.XetHash = file.String()
		x.SHA256Verified = verified
		res.Size = int64(size)
		res.Authenticated = true
		res.Actions = map[string]*lfsbatch.Action{"download": x.Action(g.xetExpiresIn)}
	default:
		res.Size = int64(size)
		res.Authenticated = true
		res.Actions = map[string]*lfsbatch.Action{"download": {
			Href: objectURL, Header: map[string]string{"Authorization": "Bearer " + g.tok}, ExpiresIn: g.expiresIn}}
	}
	return res, nil
}

// answerHubObject answers one object the Hub's way: uploads as answerObject does (xet or a basic PUT
// kept as a legacy object); downloads with a bridge URL for Xet objects, a CDN URL for legacy ones.
func (s *Server) answerHubObject(g *batchGrant, o lfsbatch.Object, res lfsbatch.Result, file hash.Hash, size uint64, known bool) lfsbatch.Result {
	legacySize, legacy := s.hasLegacy(g.ns, o.OID)
	switch {
	case g.write && (known || legacy):
		if (known && int64(size) != o.Size) || (!known && legacySize != o.Size) {
			res.Error = &lfsbatch.ObjectError{Code: http.StatusUnprocessableEntity, Message: "object exists with another size"}
		}
	case g.write && g.useXet:
		res.Authenticated = true
		res.Actions = map[string]*lfsbatch.Action{"upload": g.xet.Action(0)}
	case g.write:
		res.Authenticated = true
		res.Actions = map[string]*lfsbatch.Action{"upload": {Href: g.base + "/" + g.ns + ".git/info/lfs/objects/" + o.OID,
			Header: map[string]string{"Authorization": "Bearer " + g.tok}, ExpiresIn: g.expiresIn}}
	case known:
		res.Size = int64(size)
		res.Authenticated = true
		res.Actions = map[string]*lfsbatch.Action{"download": {Href: s.bridgeURL(g.base, g.ns, file), ExpiresIn: int64(bridgeTTL / time.Second)}}
	case legacy:
		res.Size = legacySize
		res.Authenticated = true
		res.Actions = map[string]*lfsbatch.Action{"download": {Href: s.cdnURL(g.base, g.ns, o.OID), ExpiresIn: int64(bridgeTTL / time.Second)}}
	default:
		res.Error = &lfsbatch.ObjectError{Code: http.StatusNotFound, Message: "Object does not exist"}
	}
	return res
}

// tokenRoute is the absolute URL of the token refresh route for namespace ns, Hub style:
// /api/{models|datasets|spaces}/{repo}/xet-{read|write}-token/{rev}.
func tokenRoute(base, ns string, scope Scope, rev string) string {
	typ, repo := "models", ns
	for _, t := range []string{"datasets", "spaces"} {
		if rest, ok := strings.CutPrefix(ns, t+"/"); ok {
			typ, repo = t, rest
		}
	}
	return base + "/api/" + typ + "/" + repo + "/xet-" + string(scope) + "-token/" + url.PathEscape(rev)
}

// isSHA256Algo reports whether a batch request's hash_algo names SHA-256: absent (the LFS default),
// "sha256" (git-lfs, the spec) or "sha_256" (huggingface.js's commit path; the Hub accepts it).
func isSHA256Algo(a string) bool { return a == "" || a == "sha256" || a == "sha_256" }
