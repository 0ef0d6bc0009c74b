package server

import (
	"errors"
	"net/http"

	"github.com/git-xet-transfer/git-xet-transfer/xet/server/webui"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// The web view (xet/server/webui) at /ui/ on the main port, read-only, behind the credentials of
// the repositories it shows: HTTP Basic against the users file (the LFS routes' login, with its
// limits on failures), a client certificate where the listener requires one, nothing on an open
// server (loopback only, loopback Host only). A user sees the repositories the users file lets
// them read; the server's own tokens do not open it. The routes are exact paths (the repository
// is a query parameter), so no repository's LFS routes (/{repo}.git/info/lfs/…) fall under them.
// Config.UI off, or the Hub emulator, leaves the routes out: /ui/ is then 404.

// newUI builds the view over the store, or nil when it is off.
func newUI(cfg Config) (*webui.View, error) {
	if !cfg.UI || cfg.Hub != nil {
		return nil, nil
	}
	src, ok := cfg.Store.(webui.Source)
	if !ok {
		return nil, errors.New("server: the web view needs a store that lists its repositories (store.Store)")
	}
	return webui.New(webui.Config{Source: src, Quota: cfg.Quotas.limits, Log: cfg.Log}), nil
}

// uiRoutes adds the view's routes to m (none when it is off).
func (s *Server) uiRoutes(m *http.ServeMux) {
	if s.ui == nil {
		return
	}
	m.HandleFunc("GET /ui/{$}", s.uiPage(s.ui.Index))
	m.HandleFunc("GET /ui/repo", s.uiPage(s.ui.Repo))
	m.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		webui.SetHeaders(w)
		http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
	})
}

// uiPage authenticates a page's viewer before the page reads anything.
func (s *Server) uiPage(page func(http.ResponseWriter, *http.Request, webui.Viewer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		webui.SetHeaders(w)
		who, ok := s.uiViewer(w, r)
		if ok {
			page(w, r, who)
		}
	}
}

// uiViewer is who asks for a page: on an open server anyone who reached it (it reads every
// repository), else a user of the users file by HTTP Basic, whose access is read from the table
// in force at each check. It answers a refusal itself: 401 with a Basic challenge (the browser
// asks for the user name and password), or the login limits' 429 and 503.
func (s *Server) uiViewer(w http.ResponseWriter, r *http.Request) (webui.Viewer, bool) {
	if s.Open() {
		return webui.Viewer{CanRead: func(string) bool { return true }, ReadsAll: true}, true
	}
	name, pass, ok := r.BasicAuth()
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="xet-server", charset="UTF-8"`)
		http.Error(w, "the web view takes the user name and password of the users file", http.StatusUnauthorized)
		return webui.Viewer{}, false
	}
	u, ok := s.login(w, r, name, pass)
	if !ok {
		return webui.Viewer{}, false
	}
	noteUser(r, u.Name)
	users := s.cfg.Users
	return webui.Viewer{
		Name: u.Name,
		CanRead: func(ns string) bool {
			cur := users.Lookup(name)
			return cur != nil && cur.CanAccess(ns, false)
		},
		ReadsAll: u.Repos == nil,
	}, true
}

// limits are the quotas of repository ns for the web view.
func (q *Quotas) limits(ns string) webui.Limits {
	owner := store.Owner(ns)
	return webui.Limits{Repo: q.Limit(ns), Owner: owner, OwnerLimit: q.ownerLimit(owner)}
}
