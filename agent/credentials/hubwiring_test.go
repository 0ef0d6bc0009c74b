package credentials_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/git-lfs/git-lfs/v3/creds"

	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/agent/hub"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
)

// schemeHelper answers every fill with an authentication scheme of its own (git 2.46's authtype
// and credential) and keeps each fill's wwwauth[].
type schemeHelper struct {
	mu      sync.Mutex
	wwwauth [][]string
}

func (h *schemeHelper) Fill(in creds.Creds) (creds.Creds, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wwwauth = append(h.wwwauth, in["wwwauth[]"])
	out := creds.Creds{"authtype": {"Token"}, "credential": {"tok-abc123"}}
	for k, v := range in {
		out[k] = v
	}
	return out, nil
}
func (h *schemeHelper) Approve(creds.Creds) error { return nil }
func (h *schemeHelper) Reject(creds.Creds) error  { return nil }

// An LFS server that wants its own scheme gets it from a helper that answers one: a request that
// goes anonymous first is refused, the refusal's challenge goes to the helper's fill (wwwauth[]),
// and the request is sent again with "Authorization: <authtype> <credential>", as git-lfs sends it.
func TestAPISendsTheHelpersSchemeAfterTellingItTheChallenge(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Token tok-abc123" {
			w.Header().Set("LFS-Authenticate", `Token realm="lfs"`)
			w.Header().Set("WWW-Authenticate", `Token realm="git.example"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
		_, _ = w.Write([]byte(`{"objects":[]}`))
	}))
	defer srv.Close()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_ENDPOINT", "")
	t.Setenv("NETRC", filepath.Join(t.TempDir(), "none"))
	lfs := srv.URL + "/team/models.git/info/lfs"
	r, err := credentials.NewForURL(context.Background(), gitrepo.New(gitrepo.Git{Dir: t.TempDir()}), credentials.EnvFrom(os.Environ()), lfs, "download")
	if err != nil {
		t.Fatal(err)
	}
	h := &schemeHelper{}
	credentials.SetHelper(r, h)
	api := hub.NewAPI(r, srv.Client(), "test")
	if _, err := api.DoRead(context.Background(), hub.Request{Method: "POST", URL: lfs + "/objects/batch", Body: []byte(`{}`), Anonymous: true, LFS: true}, 1<<20); err != nil {
		t.Fatalf("the request failed: %v (the server saw %q)", err, seen)
	}
	if !slices.Equal(seen, []string{"", "Token tok-abc123"}) {
		t.Errorf("the server saw Authorization %q, want none, then the helper's scheme", seen)
	}
	want := []string{`Token realm="lfs"`, `Token realm="git.example"`}
	if len(h.wwwauth) != 1 || !slices.Equal(h.wwwauth[0], want) {
		t.Errorf("the helper's fills carried wwwauth[] %q, want one with %q", h.wwwauth, want)
	}
}
