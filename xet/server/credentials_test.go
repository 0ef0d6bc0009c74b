package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// xetUpload is the upload action of a xet batch for repo as the Basic user hdr.
func (e *env) xetUpload(repo string, hdr []string) *lfsbatch.Action {
	e.t.Helper()
	data := vectors.SplitMix(1000, 5)
	obj := lfsbatch.Object{OID: sha256Hex(data), Size: int64(len(data))}
	return servertest.XetAction(e.t, e.base+"/"+repo+".git/info/lfs", "upload", obj, hdr...)
}

// Nothing minted from a token outlives it: a refresh credential an hour from its end mints a CAS
// token that ends with it, not a full TTL later; and however often it is used, no token it mints
// lives past its first expiry. A CAS token mints nothing at the batch route.
func TestMintedTokensKeepTheFirstExpiry(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Users = mustUsers(t, servertest.UserLine("alice", alicePW, ""))
		c.TokenTTL, c.RefreshTTL = 2*time.Hour, 12*time.Hour
	})
	up := e.xetUpload("org/repo", servertest.Basic("alice", alicePW))
	refresh := up.Header["Authorization"]
	rc, err := e.srv.tokens.Verify(strings.TrimPrefix(refresh, "Bearer "))
	if err != nil || up.ExpiresIn != 12*3600 {
		t.Fatalf("refresh credential: %v, action expires_in %d", err, up.ExpiresIn)
	}
	e.clock.Advance(11 * time.Hour)
	for range 3 {
		res := e.do("GET", up.Href, nil, "Authorization", refresh)
		tok := decodeJSON[casapi.Token](t, res.body)
		c, err := e.srv.tokens.Verify(tok.AccessToken)
		if res.status != 200 || err != nil || tok.Exp != rc.Exp || c.Exp != rc.Exp {
			t.Fatalf("token minted an hour before the refresh credential ends: %v (exp %d, the credential's %d)", res, tok.Exp, rc.Exp)
		}
		e.clock.Advance(20 * time.Minute)
	}
	if res := e.do("GET", up.Href, nil, "Authorization", refresh); res.status != 401 {
		t.Fatalf("refresh credential past its end: %v", res)
	}
	cas := e.xetUpload("org/repo", servertest.Basic("alice", alicePW)).Header[lfsbatch.HeaderAccessToken]
	if res, _ := e.batch("org/repo", batchBody("download", []string{"xet"}), servertest.Bearer(cas)...); res.status != 401 {
		t.Fatalf("a batch authenticated by a CAS token: %v", res)
	}
}

// Every token is checked against the users table in force at each request: a user removed, whose
// password changed, who lost a repository or was downgraded to read is refused at the next request
// of every token minted before, on CAS, LFS object and token routes.
func TestTokensFollowTheUsersFile(t *testing.T) {
	usersPath := t.TempDir() + "/users"
	write := func(lines ...string) {
		if err := os.WriteFile(usersPath, []byte(strings.Join(lines, "")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(servertest.UserLine("alice", alicePW, ""), servertest.UserLine("bob", bobPW, ""))
	users, err := LoadUsers(usersPath)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.Users = users })
	r := loadRef(t)
	xorbPath := "/v1/xorbs/default/" + r.xorbHash.String()
	up := e.xetUpload("org/repo", servertest.Basic("alice", alicePW))
	aliceCAS, aliceRefresh := up.Header[lfsbatch.HeaderAccessToken], up.Header["Authorization"]
	bobCAS := e.xetUpload("org/repo", servertest.Basic("bob", bobPW)).Header[lfsbatch.HeaderAccessToken]
	status := func(method, path string, body []byte, hdr ...string) int {
		return e.do(method, path, body, hdr...).status
	}
	reload := func(lines ...string) {
		write(lines...)
		if err := users.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tok := range []string{aliceCAS, bobCAS} {
		if got := status("HEAD", xorbPath, nil, servertest.Bearer(tok)...); got != 404 {
			t.Fatalf("before any change: %d", got)
		}
	}

	// bob may write only to other/*; alice's password changes.
	reload(servertest.UserLine("alice", "alice-new-password", ""), servertest.UserLine("bob", bobPW, ":write:other/*"))
	for name, got := range map[string]int{
		"alice's CAS token":            status("HEAD", xorbPath, nil, servertest.Bearer(aliceCAS)...),
		"alice's refresh credential":   status("GET", up.Href, nil, "Authorization", aliceRefresh),
		"alice's CAS token, LFS route": status("GET", "/org/repo.git/info/lfs/objects/"+strings.Repeat("ab", 32), nil, servertest.Bearer(aliceCAS)...),
	} {
		if got != 401 {
			t.Errorf("after a password change, %s: %d, want 401", name, got)
		}
	}
	if got := status("HEAD", xorbPath, nil, servertest.Bearer(bobCAS)...); got != 403 {
		t.Errorf("bob's token of a repository he lost: %d, want 403", got)
	}

	// bob gets the repository back, read only.
	reload(servertest.UserLine("bob", bobPW, ":read"))
	if got := status("POST", xorbPath, r.xorbBody, servertest.Bearer(bobCAS)...); got != 403 {
		t.Errorf("bob, downgraded to read, uploading with his write token: %d, want 403", got)
	}
	if got := status("HEAD", xorbPath, nil, servertest.Bearer(bobCAS)...); got == 401 || got == 403 {
		t.Errorf("bob, downgraded to read, reading with his write token: %d", got)
	}
	// A token naming no listed user (minted by an open server with the same secret) opens nothing.
	anon, err := e.srv.tokens.Issue(Claims{Namespace: "org/repo", Scope: ScopeWrite, Exp: e.clock.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if got := status("HEAD", xorbPath, nil, servertest.Bearer(anon)...); got != 401 {
		t.Errorf("a token of no user: %d, want 401", got)
	}
}

// A (user, address) pair runs at most one KDF per window; another address is not held back by it;
// one address spends at most its budget of KDFs whatever names it tries; and the guard's memory
// stays bounded however many pairs and addresses it meets.
func TestLoginGuard(t *testing.T) {
	g := newLoginGuard()
	now := time.Unix(1_000_000, 0)
	u := &Users{cacheK: [32]byte{1}}
	pair := func(name, src string) [32]byte { return u.mac(name + "\x00" + src) }
	if _, ok := g.admit(pair("alice", "a"), "a", now); !ok {
		t.Fatal("first try refused")
	}
	if wait, ok := g.admit(pair("alice", "a"), "a", now.Add(time.Second)); ok || wait != failWindow-time.Second {
		t.Fatalf("second try within the window: admitted %v, wait %v", ok, wait)
	}
	if _, ok := g.admit(pair("alice", "b"), "b", now.Add(time.Second)); !ok {
		t.Fatal("the same user from another address was held back")
	}
	if _, ok := g.admit(pair("alice", "a"), "a", now.Add(failWindow)); !ok {
		t.Fatal("a try after the window was refused")
	}
	// Address c tries a new name each time: it spends its burst, then earns sourceRate.
	admitted := 0
	for i := range 100 {
		if _, ok := g.admit(pair(fmt.Sprint("name", i), "c"), "c", now); ok {
			admitted++
		}
	}
	if admitted != int(sourceBurst) {
		t.Fatalf("an address admitted %d KDFs at once, want %v", admitted, sourceBurst)
	}
	if _, ok := g.admit(pair("another", "c"), "c", now.Add(time.Second)); !ok {
		t.Fatal("the address earned no KDF in a second")
	}
	// Many addresses and names: the maps stay bounded.
	for i := range 3 * maxGuardEntries {
		src := fmt.Sprint("10.0.", i/250, ".", i%250)
		g.admit(pair("x", src), src, now.Add(time.Duration(i)*time.Millisecond))
		if n := len(g.tries) + len(g.budgets); n > maxGuardEntries+2 {
			t.Fatalf("%d entries after %d addresses", n, i+1)
		}
	}
}

// A $sha256$ hash with an empty salt is refused at load, with a message that says so.
func TestEmptySaltRefused(t *testing.T) {
	_, err := ParseUsers(strings.NewReader("ci:$sha256$$" + strings.Repeat("ab", 32) + "\n"))
	if err == nil || !strings.Contains(err.Error(), "empty salt") {
		t.Fatalf("empty salt: %v", err)
	}
}

// UsersLine (what hash-password prints) writes a line exactly when ParseUsers takes it back, with
// the same name and access: the two read one rule, so a name or access one accepts is never one
// the other refuses.
func TestUsersLineIsWhatParseUsersReads(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alice", "a.b_c-d@e", "", "a:b", "bob smith", "é", strings.Repeat("n", 128), strings.Repeat("n", 129), "x\n"} {
		for _, access := range []string{"", "read", "write", "admin", "READ"} {
			line, lineErr := UsersLine(name, h, access)
			us, parseErr := ParseUsers(strings.NewReader(name + ":" + h + ":" + access + "\n"))
			if (lineErr == nil) != (parseErr == nil) {
				t.Errorf("%q, access %q: UsersLine says %v, ParseUsers %v", name, access, lineErr, parseErr)
				continue
			}
			if lineErr != nil {
				continue
			}
			back, err := ParseUsers(strings.NewReader(line + "\n"))
			u := back[name]
			if err != nil || u == nil || u.Write != us[name].Write || u.Write != (access != "read") {
				t.Errorf("%q, access %q: line %q read back as %+v, %v", name, access, line, u, err)
			}
		}
	}
}

// An open server answers only a loopback Host or the public URL's (DNS rebinding); a server with
// users, and a connection with a verified client certificate, are not held to it.
func TestOpenServerHost(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PublicURL = "https://xet.example.com:8443/" })
	for host, want := range map[string]int{"127.0.0.1:1": 200, "127.9.9.9": 200, "[::1]:80": 200, "localhost": 200,
		"LOCALHOST.:80": 200, "a.localhost": 200, "xet.example.com": 200, "xet.example.com:9": 200,
		"evil.example": 403, "": 403, "127.0.0.1.evil.example": 403, "localhost.evil.example": 403, "0.0.0.0": 403,
		"[::ffff:127.0.0.1]": 200, "10.0.0.1": 403} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %q: %d, want %d", host, rec.Code, want)
		}
	}
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Host = "evil.example"
	req.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{}}}}
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("a client-certificate connection: %d", rec.Code)
	}
	withUsers := newEnv(t, func(c *Config) { c.Users = testerUsers(t) })
	req.TLS = nil
	rec = httptest.NewRecorder()
	withUsers.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("a server with users, foreign Host: %d", rec.Code)
	}
}

// A login's source is the peer, or behind a trusted proxy the nearest untrusted address its
// X-Forwarded-For names; IPv6 by /64.
func TestClientAddr(t *testing.T) {
	s := &Server{cfg: Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}
	for _, c := range []struct{ remote, xff, want string }{
		{"192.0.2.1:5000", "", "192.0.2.1"},
		{"192.0.2.1:5000", "198.51.100.7", "192.0.2.1"}, // not a trusted proxy: its header is the client's word
		{"10.1.2.3:5000", "198.51.100.7", "198.51.100.7"},
		{"10.1.2.3:5000", "203.0.113.9, 198.51.100.7, 10.9.9.9", "198.51.100.7"}, // what the client wrote is left of it
		{"10.1.2.3:5000", "", "10.1.2.3"},
		{"10.1.2.3:5000", "garbage", "10.1.2.3"},
		{"[2001:db8:1:2:3:4:5:6]:443", "", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.1]:5000", "", "192.0.2.1"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := s.clientAddr(r); got != c.want {
			t.Errorf("%s, X-Forwarded-For %q: %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
}
