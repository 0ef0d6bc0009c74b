package server

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// HubCompat makes the server answer the LFS and token routes the way the Hugging Face Hub does, so
// that a Hub client can be tested end to end on loopback:
//
//   - credentials are Hub access tokens, sent as "Authorization: Bearer <token>" or as the password
//     of HTTP Basic with any user name (what git credential helpers and git-lfs-authenticate give);
//   - upload batches answer "xet" when the client offers it, with actions that carry only the four
//     X-Xet-* headers and whose href is the xet-write-token route of the pushed ref; stored objects get
//     no actions;
//   - download batches always answer "basic": objects stored in Xet get a signed bridge URL
//     (/xet-bridge-us/<24-hex repo id>/<Xet hash>?X-Amz-...) whose GET streams the whole file (Range
//     supported); objects pushed through the basic transfer are kept whole in LegacyDir (the Hub's
//     not-yet-migrated objects) and get a CDN-style signed URL;
//   - the token routes take a percent-encoded revision and ?create_pr=1, answer the token in the body
//     and in X-Xet-* headers, and fail with X-Error-Code, X-Error-Message and {"error": ...};
//   - POST /v1/telemetry is answered 200 without a credential, and its body is not read.
type HubCompat struct {
	// Tokens maps a Hub token to what it may do (Write, Repos as in the users file). See ParseHubTokens.
	Tokens map[string]*User
	// Public repositories (path.Match patterns over "ns/name", "datasets/ns/name") are readable
	// without a credential.
	Public []string
	// LegacyDir keeps objects uploaded through the basic transfer, whole; "" refuses such uploads.
	LegacyDir string
}

// ParseHubTokens reads a Hub token table: one "token:name:read|write[:repo,pattern,...]" per line,
// '#' comments. The emulator keeps tokens in clear: it is for tests.
func ParseHubTokens(r io.Reader) (map[string]*User, error) {
	out := map[string]*User{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, ":", 4)
		if len(f) < 3 || f[0] == "" || f[1] == "" || (f[2] != "read" && f[2] != "write") {
			return nil, fmt.Errorf("hub tokens line %d: want token:name:read|write[:repos]", n)
		}
		u := &User{Name: f[1], Write: f[2] == "write"}
		if len(f) == 4 && f[3] != "" {
			u.Repos = strings.Split(f[3], ",")
		}
		out[f[0]] = u
	}
	return out, sc.Err()
}

func (h *HubCompat) public(ns string) bool {
	for _, p := range h.Public {
		if ok, _ := path.Match(p, ns); ok {
			return true
		}
	}
	return false
}

// token finds the Hub token in constant time per entry.
func (h *HubCompat) token(t string) *User {
	var found *User
	for k, u := range h.Tokens {
		if subtle.ConstantTimeCompare([]byte(k), []byte(t)) == 1 {
			found = u
		}
	}
	return found
}

// writeHubError answers the Hub's way: X-Error-Code, X-Error-Message and {"error": msg} (plus
// "message", which git-lfs shows for LFS routes).
func writeHubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	writeJSON(w, status, struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{msg, msg})
}

// authHub authenticates an LFS or token-route request in Hub mode: a Hub token (Bearer, or the Basic
// password), or a token this server issued (basic actions). read: the request only reads; needWrite
// is how much a Hub token must allow (a PR ref needs read access only).
func (s *Server) authHub(w http.ResponseWriter, r *http.Request, ns string, needWrite bool) (principal, bool) {
	h := s.cfg.Hub
	var secret string
	if tok, ok := bearer(r); ok {
		if c, err := s.tokens.Verify(tok); err == nil && !c.Refresh {
			if c.Namespace != ns || (needWrite && c.Scope != scopeWrite) {
				return s.lfsDeny(w, http.StatusForbidden, "", "token does not allow this on "+ns)
			}
			who, _, _ := s.tokenPrincipal(c, needWrite) // no users table in Hub mode
			return who, true
		}
		secret = tok
	} else if _, pass, ok := r.BasicAuth(); ok {
		secret = pass
	}
	if secret == "" {
		if !needWrite && h.public(ns) {
			return principal{}, true
		}
		return s.lfsDeny(w, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
	}
	u := h.token(secret)
	switch {
	case u == nil:
		return s.lfsDeny(w, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
	case !u.CanAccess(ns, false) && !h.public(ns):
		return s.lfsDeny(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
	case needWrite && !u.CanAccess(ns, true):
		return s.denyWrite(w, ns, principal{name: u.Name})
	}
	return principal{name: u.Name, write: u.CanAccess(ns, true)}, true
}

// bridgeID is the 24-hex id a bridge URL carries for a repository (the Hub's repo object id).
func bridgeID(ns string) string {
	s := sha256.Sum256([]byte("repo\x00" + ns))
	return hex.EncodeToString(s[:12])
}

// handleTelemetry accepts xet-core's telemetry and drops it unread. The route takes no
// credential, so it does no work for one: not a byte of the body is read, and a request with a body
// has its connection closed after the answer (net/http would otherwise read up to 256 KiB of it to
// keep the connection).
func (s *Server) handleTelemetry(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(http.StatusOK)
}

// legacyPath is where an object uploaded through the basic transfer is kept in Hub mode.
func (s *Server) legacyPath(ns, oid string) string {
	return path.Join(s.cfg.Hub.LegacyDir, bridgeID(ns), oid)
}

// keepLegacy stores a basic-transfer upload whole (temp file, SHA-256 check, fsync, rename).
func (s *Server) keepLegacy(ns, oid string, body io.Reader) error {
	dst := s.legacyPath(ns, oid)
	if err := os.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(path.Dir(dst), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	sum := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, sum), body); err != nil {
		f.Close()
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != oid {
		f.Close()
		return &store.InvalidError{Reason: fmt.Sprintf("the body's SHA-256 is %s, not the oid %s", got, oid)}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), dst)
}

// putLegacy answers a basic-transfer PUT in Hub mode: the object is kept whole, as the Hub keeps
// uploads of clients without Xet until it migrates them.
func (s *Server) putLegacy(w http.ResponseWriter, r *http.Request, ns, oid string) {
	if s.cfg.Hub.LegacyDir == "" {
		writeHubError(w, http.StatusForbidden, "", "this repository stores new files in Xet: install git-xet")
		return
	}
	if _, ok := s.hasLegacy(ns, oid); ok {
		w.WriteHeader(http.StatusOK)
		return
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.Limits.Object)
	if err := s.keepLegacy(ns, oid, body); err != nil {
		s.failLFS(w, r, "upload", err)
		return
	}
	w.WriteHeader(http.StatusOK)
}
