package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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
	req, write, ok := s.decodeBatch(w, r)
	if !ok {
		return
	}
	// On the Hub a reader may push to a pull-request ref.
	needWrite := write && !(s.cfg.Hub != nil && req.Ref != nil && strings.HasPrefix(req.Ref.Name, "refs/pr/"))
	who, ok := s.authRepo(w, r, ns, needWrite)
	if !ok {
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
	if write && !s.withinQuota(w, r, ns, uploadBytes(resp.Objects)) {
		return
	}
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
}

// uploadBytes is the size of the objects a batch answer asks the client to upload.
func uploadBytes(objs []lfsbatch.Result) int64 {
	var n int64
	for _, o := range objs {
		if o.Actions["upload"] != nil {
			n += max(o.Size, 0)
		}
	}
	return n
}

// grant issues the batch's tokens: a CAS token for ns and the operation's scope, and for xet
// actions the headers naming the CAS and, with authentication, a refresh credential.
func (s *Server) grant(r *http.Request, ns string, who principal, req *lfsbatch.Request, write bool) (*batchGrant, error) {
	scope := scopeRead
	if write {
		scope = scopeWrite
	}
	exp := s.now().Add(s.cfg.TokenTTL)
	tok, err := s.tokens.Issue(Claims{Namespace: ns, Scope: scope, Exp: exp.Unix(), Subject: who.name})
	if err != nil {
		return nil, err
	}
	rev := "main"
	if req.Ref != nil && req.Ref.Name != "" {
		rev = strings.TrimPrefix(req.Ref.Name, "refs/heads/")
	}
	hub := s.cfg.Hub != nil
	g := &batchGrant{ns: ns, write: write, hub: hub, tok: tok, base: s.baseURL(r),
		// The Hub answers downloads with basic even to clients that offer xet.
		useXet:    slices.Contains(req.Transfers, "xet") && (write || !hub),
		expiresIn: int64(s.cfg.TokenTTL / time.Second),
		// A xet action stays usable while its refresh credential does: the agent renews CAS tokens
		// at href itself, so git-lfs must not drop the action when the first CAS token expires.
		xetExpiresIn: int64(s.cfg.RefreshTTL / time.Second),
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
	if !s.Open() {
		// The agent calls href (the token route) with the action's other headers when its CAS token
		// nears expiry: give it a refresh credential for this repository and scope.
		rt, err := s.tokens.Issue(Claims{Namespace: ns, Scope: scope, Exp: s.now().Add(s.cfg.RefreshTTL).Unix(), Subject: who.name, Refresh: true})
		if err != nil {
			return nil, err
		}
		g.xet.Auth["Authorization"] = "Bearer " + rt
	}
	return g, nil
}

// answerObject answers one object of a batch: its actions, none when an upload is already stored,
// or its error. An error returned is the store's, not the object's.
func (s *Server) answerObject(ctx context.Context, g *batchGrant, o lfsbatch.Object) (lfsbatch.Result, error) {
	res := lfsbatch.Result{OID: o.OID, Size: o.Size}
	sha, err := hash.ParseSHA256(o.OID)
	if err != nil || strings.ToLower(o.OID) != o.OID || o.Size < 0 {
		res.Error = &lfsbatch.ObjectError{Code: http.StatusUnprocessableEntity, Message: "invalid oid or size"}
		return res, nil
	}
	lookup := s.cfg.Store.LookupSHA256
	if g.write {
		// An upload is skipped only for a verified mapping: an unverified one (written by an older
		// store, possibly wrong) is repaired by letting the upload through.
		lookup = s.cfg.Store.LookupVerifiedSHA256
	}
	file, size, err := lookup(ctx, g.ns, sha)
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

// handleTokenRoute answers GET /api/{type}s/{repo}/xet-{read|write}-token/{rev} with
// {"accessToken","exp","casUrl"}. It needs LFS credentials (Basic) when auth is on; a write token
// needs a user allowed to write to the repository.
func (s *Server) handleTokenRoute(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/api/")
	typ, rest, _ := strings.Cut(p, "/")
	var prefix string
	switch typ {
	case "models":
	case "datasets", "spaces":
		prefix = typ + "/"
	default:
		writeError(w, http.StatusNotFound, "no such route")
		return
	}
	var scope Scope
	var repo string
	if i := strings.Index(rest, "/xet-read-token/"); i > 0 {
		scope, repo = scopeRead, rest[:i]
	} else if i := strings.Index(rest, "/xet-write-token/"); i > 0 {
		scope, repo = scopeWrite, rest[:i]
	} else {
		writeError(w, http.StatusNotFound, "no such route (want /api/{type}s/{repo}/xet-{read|write}-token/{rev})")
		return
	}
	ns, ok := repoNamespace(prefix + repo)
	if !ok {
		writeError(w, http.StatusNotFound, "bad repository name")
		return
	}
	if s.cfg.Hub != nil {
		s.handleHubTokenRoute(w, r, ns, scope)
		return
	}
	who, ok := s.authTokenRoute(w, r, ns, scope == scopeWrite)
	if !ok {
		return
	}
	s.answerToken(w, r, ns, scope, who.name, false)
}

// answerToken issues a CAS token for ns and scope and answers {"accessToken","exp","casUrl"};
// with hubHeaders the same values go in the X-Xet-* response headers too, as the Hub sends them.
func (s *Server) answerToken(w http.ResponseWriter, r *http.Request, ns string, scope Scope, subject string, hubHeaders bool) {
	exp := s.now().Add(s.cfg.TokenTTL)
	tok, err := s.tokens.Issue(Claims{Namespace: ns, Scope: scope, Exp: exp.Unix(), Subject: subject})
	if err != nil {
		s.fail(w, r, "token", err)
		return
	}
	base := s.baseURL(r)
	if hubHeaders {
		w.Header().Set(lfsbatch.HeaderCasURL, base)
		w.Header().Set(lfsbatch.HeaderAccessToken, tok)
		w.Header().Set(lfsbatch.HeaderTokenExpiration, strconv.FormatInt(exp.Unix(), 10))
	}
	writeJSON(w, http.StatusOK, casapi.Token{AccessToken: tok, Exp: exp.Unix(), CasURL: base})
}

// authTokenRoute authenticates the token route: user credentials (HTTP Basic), or the refresh
// credential of a batch answer for this repository with enough scope. A CAS token cannot mint fresh
// tokens (so a leaked token dies with its expiry).
func (s *Server) authTokenRoute(w http.ResponseWriter, r *http.Request, ns string, write bool) (principal, bool) {
	tok, isBearer := bearer(r)
	if !isBearer || s.Open() {
		return s.authRepo(w, r, ns, write)
	}
	deny := func(status int, msg string) (principal, bool) {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="xet-server"`)
		}
		writeError(w, status, msg)
		return principal{}, false
	}
	c, err := s.tokens.Verify(tok)
	switch {
	case err != nil:
		return deny(http.StatusUnauthorized, "refresh credential: "+err.Error())
	case !c.Refresh:
		return deny(http.StatusUnauthorized, "the token route needs user credentials (HTTP Basic) or a refresh credential")
	case c.Namespace != ns:
		return deny(http.StatusForbidden, "refresh credential is for another repository")
	case write && c.Scope != scopeWrite:
		return deny(http.StatusForbidden, "refresh credential of scope "+string(c.Scope)+" cannot mint a write token")
	}
	noteUser(r, c.Subject)
	return principal{name: c.Subject, write: c.Scope == scopeWrite}, true
}

// isSHA256Algo reports whether a batch request's hash_algo names SHA-256: absent (the LFS default),
// "sha256" (git-lfs, the spec) or "sha_256" (huggingface.js's commit path; the Hub accepts it).
func isSHA256Algo(a string) bool { return a == "" || a == "sha256" || a == "sha_256" }
