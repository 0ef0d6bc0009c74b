package credentials

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/git-lfs/git-lfs/v3/creds"
)

// protocolHelper answers fills as `git credential fill` does in git 2.46 and later, whose helpers
// may use the capabilities git-lfs announces on every fill (capability[]=authtype, state): an
// answer of authtype and credential instead of a password, and a fill's input carrying the 401's
// challenge (wwwauth[]). git 2.39, the git of this project's CI, drops those fields on their way
// through, so the answer is handed over at git-lfs's own seam (GetCredentialHelper's helper):
// what git-lfs's chain returns is what the agent reads either way.
type protocolHelper struct {
	answer creds.Creds

	mu      sync.Mutex
	inputs  []creds.Creds // each fill's input
	actions []string
}

func (h *protocolHelper) Fill(in creds.Creds) (creds.Creds, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inputs = append(h.inputs, maps.Clone(in))
	h.actions = append(h.actions, "fill")
	out := maps.Clone(in)
	maps.Copy(out, h.answer)
	return out, nil
}

func (h *protocolHelper) Approve(creds.Creds) error { h.record("approve"); return nil }
func (h *protocolHelper) Reject(creds.Creds) error  { h.record("reject"); return nil }

func (h *protocolHelper) record(a string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.actions = append(h.actions, a)
}

func (h *protocolHelper) lastInput(t *testing.T) creds.Creds {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.inputs) == 0 {
		t.Fatal("the helper was never asked")
	}
	return h.inputs[len(h.inputs)-1]
}

const gitServer = "https://git.example/team/models.git"

// resolverWith is the resolver of a world whose remote is gitServer (not a Hub), with h as the
// credential helper chain.
func resolverWith(t *testing.T, h *protocolHelper, operation string) *Resolver {
	t.Helper()
	r := testResolver(t, "origin", operation)
	r.helper = h
	return r
}

// A helper may answer with an authentication scheme and its credential (git 2.46's authtype
// capability, which git-lfs announces on every fill) instead of a user name and password. git-lfs
// then sends "Authorization: <authtype> <credential>"; the agent said "git credential gave no
// password" and failed the transfer.
func TestHelperAnswersAnAuthScheme(t *testing.T) {
	newWorld(t, gitServer)
	get := func(answer creds.Creds) (Credential, error) {
		return resolverWith(t, &protocolHelper{answer: answer}, "upload").Get(context.Background())
	}
	for _, tc := range []struct {
		name   string
		answer creds.Creds
		auth   string
	}{
		{"scheme alone", creds.Creds{"capability[]": {"authtype"}, "authtype": {"Bearer"}, "credential": {"tok-abc123"}}, "Bearer tok-abc123"},
		{"scheme as git documents it, lower case", creds.Creds{"authtype": {"bearer"}, "credential": {"tok-abc123"}}, "bearer tok-abc123"},
		// git itself sends the scheme when a helper gives both.
		{"scheme and password", creds.Creds{"authtype": {"Bearer"}, "credential": {"tok-abc123"}, "username": {"u"}, "password": {"pw-old"}}, "Bearer tok-abc123"},
		// Half a scheme is no scheme to git: it falls back to the password.
		{"authtype without a credential", creds.Creds{"authtype": {"Bearer"}, "username": {"u"}, "password": {"pw-123"}}, "Bearer pw-123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := get(tc.answer)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			want(t, c, tc.auth, "git credential")
			if tc.answer["password"] == nil && c.ForLFS() != tc.auth {
				t.Errorf("LFS routes get %q, want %q as git-lfs sends it", c.ForLFS(), tc.auth)
			}
			if strings.Contains(c.String(), "tok-abc123") {
				t.Errorf("the source shows the secret: %q", c.String())
			}
		})
	}

	// What cannot go in a header is refused, naming the field and never its value.
	for name, answer := range map[string]creds.Creds{
		"a scheme with a space":       {"authtype": {"Bear er"}, "credential": {"tok-abc123"}},
		"a credential with a CR":      {"authtype": {"Bearer"}, "credential": {"tok-abc123\r"}},
		"a credential with a control": {"authtype": {"Bearer"}, "credential": {"tok-abc123\x00x"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := get(answer)
			if err == nil {
				t.Fatal("Get took a credential that cannot be sent")
			}
			if strings.Contains(err.Error(), "tok-abc123") || !strings.Contains(err.Error(), "git credential") {
				t.Errorf("error %q: want one naming git credential's answer, without the secret", err)
			}
		})
	}
}

// A 401's challenge (its LFS-Authenticate and WWW-Authenticate values) goes to the helper on the
// next fill, as git-lfs hands it over (wwwauth[], for helpers such as Git Credential Manager that
// pick a flow by it), unless credential.<url>.skipWWWAuth is set. Only a challenge from the
// credential's own origin counts.
func TestChallengeGoesToTheHelper(t *testing.T) {
	w := newWorld(t, gitServer)
	h := &protocolHelper{answer: creds.Creds{"username": {"u"}, "password": {"pw-123"}}}
	r := resolverWith(t, h, "upload")
	ctx := context.Background()

	c, err := r.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.lastInput(t)["wwwauth[]"]; got != nil {
		t.Errorf("a fill before any 401 carried wwwauth[] %q", got)
	}

	hdr := http.Header{}
	hdr.Add("WWW-Authenticate", `Bearer realm="git.example", error="invalid_token"`)
	hdr.Add("WWW-Authenticate", `Basic realm="git.example"`)
	hdr.Add("LFS-Authenticate", `Basic realm="lfs"`)
	r.Challenged(ctx, "https://evil.example/x", http.Header{"Www-Authenticate": {`Basic realm="evil"`}})
	r.Challenged(ctx, gitServer+"/info/lfs/objects/batch", hdr)
	r.Reject(c)
	if _, err := r.Get(ctx); err != nil {
		t.Fatal(err)
	}
	wantAuth := []string{`Basic realm="lfs"`, `Bearer realm="git.example", error="invalid_token"`, `Basic realm="git.example"`}
	if got := h.lastInput(t)["wwwauth[]"]; !slices.Equal(got, wantAuth) {
		t.Errorf("the fill after a 401 carried wwwauth[] %q, want %q (LFS-Authenticate first, as git-lfs orders them)", got, wantAuth)
	}
	if got := strings.Join(h.actions, " "); got != "fill reject fill" {
		t.Errorf("the helper saw %q", got)
	}

	// Another host's 401 is not the user's server asking.
	r.Challenged(ctx, "https://evil.example/x", http.Header{"Www-Authenticate": {`Basic realm="evil"`}})
	r.Reject(c)
	if _, err := r.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.lastInput(t)["wwwauth[]"]; !slices.Equal(got, wantAuth) {
		t.Errorf("after another host's 401 the fill carried %q, want the server's own %q", got, wantAuth)
	}

	// A huge challenge is cut to what git takes on one line, and to a bounded count.
	big := http.Header{}
	for range 1000 {
		big.Add("WWW-Authenticate", "Bearer "+strings.Repeat("x", 100))
	}
	big.Add("WWW-Authenticate", "Bearer "+strings.Repeat("y", 70000))
	r.Challenged(ctx, gitServer, big)
	r.Reject(c)
	if _, err := r.Get(ctx); err != nil {
		t.Fatal(err)
	}
	got := h.lastInput(t)["wwwauth[]"]
	if len(got) == 0 || len(got) > maxChallenges {
		t.Errorf("a 1001-value challenge went to the helper as %d values, want 1 to %d", len(got), maxChallenges)
	}
	for _, v := range got {
		if len("wwwauth[]=")+len(v) >= 65535 {
			t.Errorf("a value of %d bytes went to the helper: git refuses lines that long", len(v))
		}
	}

	// credential.<url>.skipWWWAuth keeps it back (git-lfs's own setting).
	w.git(w.repo, "config", "credential."+gitServer+".skipWWWAuth", "true")
	r = resolverWith(t, h, "upload")
	r.Challenged(ctx, gitServer+"/info/lfs/objects/batch", hdr)
	if _, err := r.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.lastInput(t)["wwwauth[]"]; got != nil {
		t.Errorf("under credential.skipWWWAuth the fill carried wwwauth[] %q", got)
	}
}

// The requests that shared a refused credential are refused together: the first rejection erases
// it and makes the next Get fill again; the others' rejections of the same credential, or of one
// already replaced, do nothing (no second erase of what the new fill may have stored, no second
// prompt).
func TestRejectOncePerCredential(t *testing.T) {
	newWorld(t, gitServer)
	h := &protocolHelper{answer: creds.Creds{"username": {"u"}, "password": {"pw-old"}}}
	r := resolverWith(t, h, "upload")
	ctx := context.Background()
	old, err := r.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.Reject(old)
	r.Reject(old)
	h.mu.Lock()
	h.answer = creds.Creds{"username": {"u"}, "password": {"pw-new"}}
	h.mu.Unlock()
	cur, err := r.Get(ctx)
	if err != nil || cur.Authorization != "Bearer pw-new" {
		t.Fatalf("Get after the rejection: %q, %v", cur.Authorization, err)
	}
	r.Reject(old) // a request that sent the old one hears its 401 late
	if c, err := r.Get(ctx); err != nil || c.Authorization != cur.Authorization {
		t.Errorf("a late rejection of the old credential dropped the new one: %q, %v", c.Authorization, err)
	}
	if got := strings.Join(h.actions, " "); got != "fill reject fill" {
		t.Errorf("the helper saw %q, want one fill, one reject, one fill", got)
	}
}
