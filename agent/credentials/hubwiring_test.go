package credentials_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	h := &schemeHelper{}
	api, lfs := helperAPI(t, srv, h)
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

// stagedHelper is a helper of git's multistage authentication (capability[]=state, git 2.46): each
// answer is one stage of an exchange, marked continue until the last (final, 0 for never), and
// carries a state[] the next fill hands back, by which it knows the stage reached.
type stagedHelper struct {
	final int

	mu      sync.Mutex
	inputs  []creds.Creds
	actions []string
}

func (h *stagedHelper) Fill(in creds.Creds) (creds.Creds, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inputs = append(h.inputs, maps.Clone(in))
	h.actions = append(h.actions, "fill")
	stage := 1
	if st := in["state[]"]; len(st) == 1 {
		if n, err := strconv.Atoi(strings.TrimPrefix(st[0], "stage:")); err == nil {
			stage = n + 1
		}
	}
	out := maps.Clone(in)
	out["authtype"] = []string{"Multistage"}
	out["credential"] = []string{"step" + strconv.Itoa(stage)}
	out["state[]"] = []string{"stage:" + strconv.Itoa(stage)}
	if stage != h.final {
		out["continue"] = []string{"1"}
	}
	return out, nil
}
func (h *stagedHelper) Approve(creds.Creds) error { h.record("approve"); return nil }
func (h *stagedHelper) Reject(creds.Creds) error  { h.record("reject"); return nil }
func (h *stagedHelper) record(a string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.actions = append(h.actions, a)
}

// stagedServer wants "Multistage step<final>" (0: nothing), answering each earlier step with a 401
// that names the next, as a challenge-response scheme does, and returns the Authorization values
// it saw.
func stagedServer(t *testing.T, final int) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		mu.Lock()
		seen = append(seen, a)
		mu.Unlock()
		if final == 0 || a != "Multistage step"+strconv.Itoa(final) {
			w.Header().Set("WWW-Authenticate", "Multistage type=after-"+strings.TrimPrefix(a, "Multistage "))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
		_, _ = w.Write([]byte(`{"objects":[]}`))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// helperAPI is the hub.API of srv's LFS endpoint in a world with no credential but h's answers
// (no HF_TOKEN, netrc or git config), and that endpoint.
func helperAPI(t *testing.T, srv *httptest.Server, h creds.CredentialHelper) (*hub.API, string) {
	t.Helper()
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
	credentials.SetHelper(r, h)
	return hub.NewAPI(r, srv.Client(), "test"), lfs
}

// A helper's multistage exchange is followed as git-lfs follows it: a 401 to a stage marked
// continue does not erase it (no reject), and the next fill hands back the stage's state[] with the
// new challenge, so the helper answers the next stage. The agent erased each stage and asked again
// without the state, which gave the first stage again, and the request failed.
func TestAPIFollowsAMultistageHelper(t *testing.T) {
	srv, seen := stagedServer(t, 2)
	h := &stagedHelper{final: 2}
	api, lfs := helperAPI(t, srv, h)
	if _, err := api.DoRead(context.Background(), hub.Request{Method: "POST", URL: lfs + "/objects/batch", Body: []byte(`{}`), LFS: true}, 1<<20); err != nil {
		t.Fatalf("the request failed: %v (the server saw %q, the helper was asked %q)", err, seen(), h.actions)
	}
	if want := []string{"Multistage step1", "Multistage step2"}; !slices.Equal(seen(), want) {
		t.Errorf("the server saw Authorization %q, want %q", seen(), want)
	}
	if want := []string{"fill", "fill", "approve"}; !slices.Equal(h.actions, want) {
		t.Errorf("the helper was asked %q, want %q (a stage marked continue is not rejected)", h.actions, want)
	}
	if len(h.inputs) == 2 {
		if got := h.inputs[1]["state[]"]; !slices.Equal(got, []string{"stage:1"}) {
			t.Errorf("the second fill carried state[] %q, want the first stage's", got)
		}
		if got := h.inputs[1]["wwwauth[]"]; !slices.Equal(got, []string{"Multistage type=after-step1"}) {
			t.Errorf("the second fill carried wwwauth[] %q, want the first stage's challenge", got)
		}
	}
}

// An exchange that never ends is bounded as git-lfs bounds it, three credentials for a request,
// none rejected or approved, and the next request begins the exchange again: its fill carries no
// state of the refused one.
func TestAPIEndsAMultistageExchangeAtTheLimit(t *testing.T) {
	srv, seen := stagedServer(t, 0)
	h := &stagedHelper{}
	api, lfs := helperAPI(t, srv, h)
	req := hub.Request{Method: "POST", URL: lfs + "/objects/batch", Body: []byte(`{}`), LFS: true}
	if _, err := api.DoRead(context.Background(), req, 1<<20); err == nil {
		t.Fatal("a request the server never accepts passed")
	}
	if want := []string{"Multistage step1", "Multistage step2", "Multistage step3"}; !slices.Equal(seen(), want) {
		t.Errorf("the server saw Authorization %q, want %q", seen(), want)
	}
	if want := []string{"fill", "fill", "fill"}; !slices.Equal(h.actions, want) {
		t.Errorf("the helper was asked %q, want %q", h.actions, want)
	}
	_, _ = api.DoRead(context.Background(), req, 1<<20)
	if len(h.inputs) < 4 {
		t.Fatalf("the next request asked the helper %d times in all, want a fill", len(h.inputs))
	}
	if got := h.inputs[3]["state[]"]; len(got) != 0 {
		t.Errorf("the next request's fill carried state[] %q, want none (the exchange begins again)", got)
	}
}
