// Package servertest is test support for the tests that run xet-server or its handler (test/,
// cmd/xet-server, xet/server): free loopback addresses, users files, HTTP credentials, and the
// credentials a running server hands out (a xet action of its batch API, a token of its token
// route), asked over HTTP as a client asks them. It imports no server package, so that
// xet/server's own tests can use it.
package servertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// FreeAddr is a loopback address (127.0.0.1:PORT) nothing listens on as it returns.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// UserLine is a users-file line, newline included, for name with password pw and rest after the
// hash (":read", ":write:org/*", or "" for write access everywhere). Its hash is the $sha256$
// form, fast to check: for tests that do not measure the KDF (hash-password writes that).
func UserLine(name, pw, rest string) string {
	salt := []byte("servertest-" + name)
	sum := sha256.Sum256(append(append([]byte{}, salt...), pw...))
	return name + ":$sha256$" + hex.EncodeToString(salt) + "$" + hex.EncodeToString(sum[:]) + rest + "\n"
}

// WriteUsers writes the users file at path with lines (each ending in a newline), through a temp
// file and a rename: a server reloading it reads the old file or the new one.
func WriteUsers(t testing.TB, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// Basic is the Authorization header (name and value) of HTTP Basic for user and password.
func Basic(user, pw string) []string {
	return []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))}
}

// Bearer is the Authorization header (name and value) of a bearer token.
func Bearer(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

// XetAction asks the LFS batch API at lfsURL (.../info/lfs; user info in it is sent as HTTP
// Basic) for a xet transfer of obj, op "upload" or "download", with the headers hdr (name, value,
// ...), and returns its action for op; the test fails on any other answer.
func XetAction(t testing.TB, lfsURL, op string, obj lfsbatch.Object, hdr ...string) *lfsbatch.Action {
	t.Helper()
	u, err := url.Parse(lfsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(lfsbatch.Request{Operation: op, Transfers: []string{"xet"}, HashAlgo: "sha256", Objects: []lfsbatch.Object{obj}})
	user, pw, withUser := u.User.Username(), "", u.User != nil
	if withUser {
		pw, _ = u.User.Password()
		u.User = nil
	}
	req, err := http.NewRequest("POST", u.String()+"/objects/batch", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if withUser {
		req.SetBasicAuth(user, pw)
	}
	req.Header.Set("Content-Type", "application/vnd.git-lfs+json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	status, b := do(t, req)
	var br lfsbatch.Response
	if err := json.Unmarshal(b, &br); err != nil || status != 200 || len(br.Objects) != 1 || br.Objects[0].Actions[op] == nil {
		t.Fatalf("%s batch at %s: %d %s", op, u.Redacted(), status, b)
	}
	return br.Objects[0].Actions[op]
}

// CASToken is the CAS access token of a xet action.
func CASToken(a *lfsbatch.Action) string { return a.Header[lfsbatch.HeaderAccessToken] }

// RouteToken asks a token route (GET .../xet-read-token/REV or .../xet-write-token/REV) with the
// headers hdr for a CAS token; the test fails unless it gets one.
func RouteToken(t testing.TB, url string, hdr ...string) string {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	status, b := do(t, req)
	var tok casapi.Token
	if status != 200 || json.Unmarshal(b, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("token route %s: %d %s", url, status, b)
	}
	return tok.AccessToken
}

// do sends req and reads its answer whole.
func do(t testing.TB, req *http.Request) (int, []byte) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Redacted(), err)
	}
	return res.StatusCode, b
}

// Get GETs url with the headers hdr and returns the answer's status and body, read whole; a
// failure to send or read fails the test.
func Get(t testing.TB, url string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	code, b := do(t, req)
	return code, string(b)
}

// FullDuplex serves h, a reverse proxy of a test (httputil.ReverseProxy), in full duplex: the
// request body goes on being forwarded after the answer's header has come back. Without it Go's
// server, once the proxy writes the answer's header, reads what is left of the request body and
// closes it; when that races the proxy transport's last read of the body (a server that answers
// as soon as it has the JSON it needs), the transport fails its write and closes the connection in
// the middle of the answer, and git-lfs reports "Unable to parse HTTP response ... unexpected
// EOF", now and then, more often on a loaded machine.
func FullDuplex(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		h.ServeHTTP(w, r)
	})
}
