package server

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// bridgeTTL is how long a bridge or CDN URL stays valid (the Hub's X-Amz-Expires=3600).
const bridgeTTL = time.Hour

// bridgeURL is the signed bridge URL of Xet file file of repository ns.
func (s *Server) bridgeURL(base, ns string, file hash.Hash) string {
	return s.urls.SignPath(base, "/xet-bridge-us/"+bridgeID(ns)+"/"+file.String(), bridgeTTL)
}

// cdnURL is the signed CDN-style URL of a legacy (not Xet) object.
func (s *Server) cdnURL(base, ns, oid string) string {
	return s.urls.SignPath(base, "/cdn-lfs/"+bridgeID(ns)+"/"+oid, bridgeTTL)
}

// handleBridge answers GET /xet-bridge-us/{id}/{file}: the whole reconstructed file (Range
// supported), for a valid signature.
func (s *Server) handleBridge(w http.ResponseWriter, r *http.Request) {
	if err := s.urls.CheckPath(r.URL.Path, r.URL.Query()); err != nil {
		writeHubError(w, http.StatusForbidden, "", err.Error())
		return
	}
	file, err := hash.Parse(r.PathValue("file"))
	if err != nil {
		writeHubError(w, http.StatusNotFound, "EntryNotFound", "bad file hash")
		return
	}
	size, err := s.cfg.Store.FileSize(r.Context(), file)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			writeHubError(w, http.StatusNotFound, "EntryNotFound", "file not found")
			return
		}
		s.fail(w, r, "bridge", err)
		return
	}
	s.streamFile(w, r, file, size, nil)
}

// handleCDN answers GET /cdn-lfs/{id}/{oid}: a legacy object, for a valid signature.
func (s *Server) handleCDN(w http.ResponseWriter, r *http.Request) {
	if err := s.urls.CheckPath(r.URL.Path, r.URL.Query()); err != nil {
		writeHubError(w, http.StatusForbidden, "", err.Error())
		return
	}
	id, oid := r.PathValue("id"), r.PathValue("oid")
	if _, err := hash.ParseSHA256(oid); err != nil || len(id) != 24 {
		writeHubError(w, http.StatusNotFound, "EntryNotFound", "no such object")
		return
	}
	f, err := os.Open(s.cfg.Hub.LegacyDir + "/" + id + "/" + oid)
	if err != nil {
		writeHubError(w, http.StatusNotFound, "EntryNotFound", "no such object")
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", contentTypeOctets)
	http.ServeContent(w, r, "", time.Time{}, f)
}

// hasLegacy reports whether repository ns keeps oid as a legacy object.
func (s *Server) hasLegacy(ns, oid string) (int64, bool) {
	if s.cfg.Hub == nil || s.cfg.Hub.LegacyDir == "" {
		return 0, false
	}
	fi, err := os.Stat(s.legacyPath(ns, oid))
	if err != nil {
		return 0, false
	}
	return fi.Size(), true
}

// handleHubTokenRoute answers /api/{type}s/{repo}/xet-{read|write}-token/{rev}[?create_pr=1] in Hub
// mode. rev is one percent-encoded segment. A write token for a pull-request ref (refs/pr/N) or with
// create_pr=1 needs only read access, as on the Hub.
func (s *Server) handleHubTokenRoute(w http.ResponseWriter, r *http.Request, ns string, scope Scope) {
	raw := r.URL.EscapedPath()
	i := strings.Index(raw, "-token/")
	rev := ""
	if i >= 0 {
		rev = raw[i+len("-token/"):]
	}
	if rev == "" || strings.Contains(rev, "/") {
		writeHubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: the revision must be one percent-encoded path segment")
		return
	}
	dec, err := url.PathUnescape(rev)
	if err != nil {
		writeHubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id")
		return
	}
	needWrite := scope == scopeWrite && r.URL.Query().Get("create_pr") != "1" && !strings.HasPrefix(dec, "refs/pr/")
	if tok, ok := bearer(r); ok {
		if _, err := s.tokens.Verify(tok); err == nil { // a CAS token mints no others: a leaked one dies when it expires
			w.Header().Set("WWW-Authenticate", `Basic realm="Hugging Face"`)
			writeHubError(w, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
			return
		}
	}
	who, ok := s.authHub(w, r, ns, needWrite)
	if !ok {
		return
	}
	s.answerToken(w, r, ns, scope, who, true)
}
