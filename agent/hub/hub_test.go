package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

const oid = "4ee3c8d0b7e2f2c14b73f6ca4ec0b1a5bd4b65e9eb4ec0df50e27d07a09a1f3b"

// client returns a Client of repo "org/model" on a server answering with h, authenticating with
// HF_TOKEN=tok (an empty tok: no credential source at all).
func client(t *testing.T, tok string, h http.HandlerFunc) (*Client, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	t.Setenv("HF_TOKEN", tok)
	t.Setenv("HF_TOKEN_PATH", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HF_ENDPOINT", srv.URL) // the server plays the Hub
	lfs := srv.URL + "/org/model.git/info/lfs"
	creds, err := credentials.NewForURL(context.Background(), gitrepo.New(gitrepo.Git{Dir: t.TempDir()}), credentials.EnvFrom(os.Environ()), lfs, "download")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(lfs, creds, srv.Client(), "test")
	if err != nil {
		t.Fatal(err)
	}
	return c, srv.URL
}

func wantErr(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	if strings.Contains(err.Error(), "sig=") || strings.Contains(err.Error(), "Signature") || strings.Contains(err.Error(), "secret-token") {
		t.Errorf("error shows a secret: %q", err)
	}
}

func TestBadBatchAnswers(t *testing.T) {
	objs := []lfsbatch.Object{{OID: oid, Size: 10}}
	for name, body := range map[string]string{
		"not JSON":       "<html>oops</html>",
		"no objects":     `{"transfer":"basic"}`,
		"other oid":      `{"objects":[{"oid":"` + strings.Repeat("a", 64) + `","size":10}]}`,
		"other size":     `{"objects":[{"oid":"` + oid + `","size":11}]}`,
		"object error":   `{"objects":[{"oid":"` + oid + `","size":10,"error":{"code":404,"message":"Object does not exist"}}]}`,
		"missing object": `{"objects":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := client(t, "secret-token", func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(body))
			})
			_, err := c.Batch(context.Background(), "download", []string{"basic"}, "", objs)
			wantErr(t, err, "/org/model.git/info/lfs/objects/batch", "127.0.0.1")
		})
	}
}

// Downloads go anonymous first; a 401 brings the credential, and a 401 to the credential names
// where it came from.
func TestAnonymousFirstThenCredential(t *testing.T) {
	var auths []string
	c, _ := client(t, "secret-token", func(w http.ResponseWriter, r *http.Request) {
		auths = append(auths, r.Header.Get("Authorization"))
		w.Header().Set("X-Error-Message", "Invalid credentials in Authorization header")
		w.WriteHeader(http.StatusUnauthorized)
	})
	_, err := c.Batch(context.Background(), "download", []string{"basic"}, "", []lfsbatch.Object{{OID: oid, Size: 1}})
	wantErr(t, err, "401", "HF_TOKEN", "Invalid credentials")
	if len(auths) != 2 || auths[0] != "" || auths[1] != "Bearer secret-token" {
		t.Errorf("requests carried %q, want none then the bearer token", auths)
	}
}

// The user's credential goes to the LFS endpoint's origin only: a URL on another host (a token
// route or an object href a batch answer names) is asked without it, even after a 401, and the
// error says why.
func TestCredentialOnlyToTheEndpoint(t *testing.T) {
	var auths []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auths = append(auths, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer other.Close()
	c, _ := client(t, "secret-token", func(w http.ResponseWriter, r *http.Request) {})
	_, err := c.Token(context.Background(), other.URL+"/api/models/org/model/xet-write-token/main", "")
	wantErr(t, err, "401", "not the LFS endpoint's host")
	_, err = c.Do(context.Background(), Request{Method: http.MethodGet, URL: other.URL + "/obj", Anonymous: true, LFS: true})
	wantErr(t, err, "401")
	if strings.Join(auths, ",") != "," {
		t.Errorf("the other host got %q, want two requests without a credential", auths)
	}
}

// A server that echoes the request's Authorization header in its error does not put the token in
// the error.
func TestEchoedCredentialScrubbed(t *testing.T) {
	c, _ := client(t, "secret-token", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte("forbidden for " + r.Header.Get("Authorization")))
	})
	_, err := c.Token(context.Background(), c.TokenURL(true, "main"), "")
	wantErr(t, err, "403", "forbidden for [redacted]")
}

func TestTokenRouteAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		body   string
		subs   []string
	}{
		"HTML":      {200, "<!doctype html><html>login</html>", []string{"not a Xet token", "/api/models/org/model/xet-read-token/refs%2Fpr%2F1"}},
		"no casUrl": {200, `{"accessToken":"x","exp":99}`, []string{"casUrl"}},
		"403":       {403, `{"error":"nope"}`, []string{"403", "nope"}},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := client(t, "secret-token", func(w http.ResponseWriter, r *http.Request) {
				if r.URL.EscapedPath() != "/api/models/org/model/xet-read-token/refs%2Fpr%2F1" {
					t.Errorf("path %s", r.URL.EscapedPath())
				}
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			})
			_, err := c.Token(context.Background(), c.TokenURL(false, "refs/pr/1"), "")
			wantErr(t, err, tc.subs...)
		})
	}
}

func TestBridgeHash(t *testing.T) {
	h := "908c39bfdfec888e295ba04e974b6342f3c15776760edd46838240a8d455525d"
	for _, u := range []string{
		"https://cas-bridge.xethub.hf.co/xet-bridge-us/66d0dccb3866d4d3087d3a9f/" + h + "?X-Amz-Signature=abc",
		"https://us.aws.cdn.hf.co/xet-bridge-us/650c7be62a602ba34904a362/" + h + "?Expires=1&Signature=x",
	} {
		got, ok, err := BridgeHash(u)
		if err != nil || !ok || got.String() != h {
			t.Errorf("BridgeHash(%s) = %s, %v, %v", u, got, ok, err)
		}
	}
	if _, ok, err := BridgeHash("https://cdn-lfs-us-1.hf.co/repos/9f/f8/" + h + "/" + h + "?sig=1"); ok || err != nil {
		t.Errorf("a CDN URL was taken for a bridge URL (%v, %v)", ok, err)
	}
	for _, bad := range []string{"https://b.example/xet-bridge-us/id/nothex?sig=1", "https://b.example/xet-bridge-us/id?sig=1",
		"https://b.example/xet-bridge-us/id/" + h[:60] + "?sig=1"} {
		_, _, err := BridgeHash(bad)
		wantErr(t, err, "b.example", "xet-bridge-us")
	}
}

// A plain download is verified before it is kept: wrong bytes, a short or a long body leave no file.
func TestGetVerified(t *testing.T) {
	data := []byte("the object's bytes")
	sum := sha256.Sum256(data)
	good := hex.EncodeToString(sum[:])
	for name, tc := range map[string]struct {
		body []byte
		ok   bool
	}{
		"right":   {data, true},
		"flipped": {append([]byte("The"), data[3:]...), false},
		"short":   {data[:5], false},
		"long":    {append(data, 'x'), false},
	} {
		t.Run(name, func(t *testing.T) {
			c, base := client(t, "", func(w http.ResponseWriter, r *http.Request) { w.Write(tc.body) })
			path := filepath.Join(t.TempDir(), "obj")
			err := c.GetVerified(context.Background(), base+"/repos/x/"+good+"?sig=secret", nil, good, int64(len(data)), path, nil)
			_, statErr := os.Stat(path)
			if tc.ok {
				if err != nil || statErr != nil {
					t.Fatalf("err %v, stat %v", err, statErr)
				}
				return
			}
			wantErr(t, err, "/repos/x/")
			if !errors.Is(err, ErrMismatch) || statErr == nil {
				t.Errorf("err %v; file left behind: %v", err, statErr == nil)
			}
		})
	}
}

// A href a batch answer gives is fetched over http(s) only: a file:// href naming a local file whose
// bytes are the object's is not read (a hostile server would have the user's files uploaded), with
// or without the user's credential.
func TestHrefNotAFile(t *testing.T) {
	data := []byte("a private file of the user")
	sum := sha256.Sum256(data)
	oidOf := hex.EncodeToString(sum[:])
	local := filepath.Join(t.TempDir(), "private")
	if err := os.WriteFile(local, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := client(t, "secret-token", func(w http.ResponseWriter, r *http.Request) {})
	path := filepath.Join(t.TempDir(), "obj")
	if err := c.GetVerified(context.Background(), "file://"+local, nil, oidOf, int64(len(data)), path, nil); err == nil {
		t.Error("GetVerified read a file:// href")
	}
	if resp, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: "file://" + local, Anonymous: true, LFS: true}); err == nil {
		resp.Body.Close()
		t.Error("Do fetched a file:// href")
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("the object was written")
	}
}

// A batch answered 503 twice, then properly, succeeds on the third attempt (the Hub's routes are
// retried like the CAS's); a 400 is not tried again; what Do returns after its attempts is not
// retryable, so a caller's loop does not multiply them.
func TestBatchRetries(t *testing.T) {
	calls := 0
	c, _ := client(t, "secret-token", func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls <= 2 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"message":"busy"}`, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"objects":[{"oid":"` + oid + `","size":10}]}`))
	})
	if _, err := c.Batch(context.Background(), "upload", []string{"basic"}, "", []lfsbatch.Object{{OID: oid, Size: 10}}); err != nil || calls != 3 {
		t.Fatalf("after two 503s: %v (%d calls)", err, calls)
	}
	calls = 0
	c, _ = client(t, "secret-token", func(w http.ResponseWriter, r *http.Request) {
		calls++
		http.Error(w, `{"message":"bad"}`, http.StatusBadRequest)
	})
	_, err := c.Batch(context.Background(), "upload", []string{"basic"}, "", []lfsbatch.Object{{OID: oid, Size: 10}})
	if err == nil || calls != 1 || retry.IsRetryable(err) {
		t.Fatalf("a 400: %v after %d calls (retryable %v)", err, calls, retry.IsRetryable(err))
	}
}

// A batch answer cut short (the connection closed mid-body) is asked for again.
func TestBatchAnswerCutShort(t *testing.T) {
	calls := 0
	c, _ := client(t, "secret-token", func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 500\r\nContent-Type: application/json\r\n\r\n{\"objects\":[")
			buf.Flush()
			conn.Close()
			return
		}
		w.Write([]byte(`{"objects":[{"oid":"` + oid + `","size":10}]}`))
	})
	if _, err := c.Batch(context.Background(), "upload", []string{"basic"}, "", []lfsbatch.Object{{OID: oid, Size: 10}}); err != nil || calls != 2 {
		t.Fatalf("after an answer cut short: %v (%d calls)", err, calls)
	}
}

// BatchEach keeps each object's own error in its result (without actions, even when a hostile
// answer gives some) and checks the rest of the answer as Batch does, at any LFS URL.
func TestBatchEachKeepsObjectErrors(t *testing.T) {
	other := strings.Repeat("b", 64)
	objs := []lfsbatch.Object{{OID: oid, Size: 10}, {OID: other, Size: 20}}
	c, base := client(t, "secret-token", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/any/lfs/objects/batch" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"transfer":"basic","objects":[{"oid":"` + oid + `","size":10,"error":{"code":404,"message":"Object does not exist"},` +
			`"actions":{"download":{"href":"https://x/y"}}},{"oid":"` + other + `","size":20,"actions":{"download":{"href":"https://x/z"}}}]}`))
	})
	a, err := c.BatchEach(context.Background(), base+"/any/lfs/", "download", []string{"basic"}, objs)
	if err != nil {
		t.Fatal(err)
	}
	if r := a.Objects[oid]; r.Error == nil || r.Error.Code != 404 || r.Actions != nil {
		t.Errorf("the missing object's result: %+v, want its 404 and no actions", r)
	}
	if r := a.Objects[other]; r.Error != nil || r.Actions["download"] == nil {
		t.Errorf("the other object's result: %+v, want its download action", r)
	}
	_, err = c.BatchEach(context.Background(), base+"/any/lfs", "download", []string{"basic"}, objs[:1])
	wantErr(t, err, "names object", "/any/lfs/objects/batch")
}

// SaveVerified keeps a file only when it is the object: exactly its size, its SHA-256; anything
// else leaves nothing at the path and says what was wrong. A body longer than the object is not
// read past one byte more, and a save whose context ended stops.
func TestSaveVerified(t *testing.T) {
	data := []byte("the object's bytes")
	sum := sha256.Sum256(data)
	oid := hex.EncodeToString(sum[:])
	path := filepath.Join(t.TempDir(), "obj")
	var seen int64
	if err := SaveVerified(context.Background(), bytes.NewReader(data), path, oid, int64(len(data)), func(n int64) { seen = n }); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved %q, %v", got, err)
	}
	if seen != int64(len(data)) {
		t.Errorf("progress said %d bytes, want %d", seen, len(data))
	}
	for name, body := range map[string]string{
		"short":   string(data[:5]),
		"long":    string(data) + strings.Repeat("x", 1<<20),
		"changed": strings.ToUpper(string(data)),
	} {
		r := strings.NewReader(body)
		err := SaveVerified(context.Background(), r, path, oid, int64(len(data)), nil)
		if !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: %v, want ErrMismatch", name, err)
		}
		if _, serr := os.Stat(path); !os.IsNotExist(serr) {
			t.Errorf("%s: the path is left (%v)", name, serr)
		}
		if read := int64(len(body) - r.Len()); read > int64(len(data))+1 {
			t.Errorf("%s: read %d bytes of a %d-byte object", name, read, len(data))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := SaveVerified(ctx, bytes.NewReader(data), path, oid, int64(len(data)), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a stopped save: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a stopped save left its file (%v)", err)
	}
}

// A batch action's token is renewed at its href with the action's own headers: a refusal names
// the status, the server's message and what to check, never the URL's query or the credential the
// server echoes back; no href says so.
func TestRefreshToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Basic good" {
			w.WriteHeader(http.StatusUnauthorized)
			casapi.Encode(w, casapi.Error{Error: "bad user name or password"})
			return
		}
		casapi.Encode(w, casapi.Token{AccessToken: "new", Exp: 1900000000, CasURL: "http://127.0.0.1"})
	}))
	defer srv.Close()
	tok, err := RefreshToken(context.Background(), srv.Client(), srv.URL+"/api/models/r/xet-write-token/main?sig=x", map[string]string{"Authorization": "Basic good"}, "ua", 0)
	if err != nil || tok.AccessToken != "new" {
		t.Fatalf("%+v, %v", tok, err)
	}
	_, err = RefreshToken(context.Background(), srv.Client(), srv.URL+"/api/models/r/xet-write-token/main?sig=x", map[string]string{"Authorization": "Basic bad"}, "ua", 0)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "bad user name or password") ||
		!strings.Contains(err.Error(), "credentials") || strings.Contains(err.Error(), "sig=x") {
		t.Errorf("refused refresh: %v", err)
	}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte("refused: " + r.Header.Get("Authorization")))
	}))
	defer echo.Close()
	_, err = RefreshToken(context.Background(), echo.Client(), echo.URL+"/r", map[string]string{"Authorization": "Basic c2VjcmV0c2VjcmV0"}, "ua", 0)
	if err == nil || strings.Contains(err.Error(), "c2VjcmV0c2VjcmV0") || !strings.Contains(err.Error(), "refused: [redacted]") {
		t.Errorf("a refusal that echoes the request: %v", err)
	}
	if _, err := RefreshToken(context.Background(), srv.Client(), "", nil, "ua", 0); err == nil || !strings.Contains(err.Error(), "no refresh route") {
		t.Errorf("empty href: %v", err)
	}
}

// stalls answers 200 with a body it never finishes, until release is closed.
func stalls(release chan struct{}) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"acc`))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}

// A token route that sends its headers and a few bytes and then nothing is abandoned after the
// stall timeout, retryably (the CAS call that needed the token tries again), on the Hub's token
// route and on a batch action's refresh route: before, the read had no bound but the caller's
// context, git-lfs's whole command, and the agent hung with every CAS call waiting for the token.
func TestStalledAnswersAreAbandoned(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(stalls(release)))
	defer srv.Close()
	_, err := RefreshToken(context.Background(), srv.Client(), srv.URL+"/token", nil, "ua", 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "stalled") || !retry.IsRetryable(err) {
		t.Fatalf("a refresh answer that stalls: %v, want a retryable stall", err)
	}
	c, _ := client(t, "secret-token", stalls(release))
	c.StallTimeout = 200 * time.Millisecond
	if _, err := c.Token(context.Background(), c.TokenURL(true, "main"), ""); err == nil || !strings.Contains(err.Error(), "stalled") || !retry.IsRetryable(err) {
		t.Fatalf("a token answer that stalls: %v, want a retryable stall", err)
	}
}
