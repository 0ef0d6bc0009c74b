package server

import (
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// A Xet client keeps a long transfer going past its CAS token's expiry by calling the action's href
// (the token route) with the action's Authorization header, a refresh credential. That credential
// opens only the token route of its repository, within its scope, until its own expiry.
func TestXetRefreshCredential(t *testing.T) {
	users := servertest.UserLine("alice", alicePW, "") + servertest.UserLine("bob", bobPW, ":read:org/*")
	e := newEnv(t, func(c *Config) {
		c.Users = mustUsers(t, users)
		c.TokenTTL = 15 * time.Minute
		c.RefreshTTL = 2 * time.Hour
	})
	data := vectors.SplitMix(10_000, 9)
	obj := lfsbatch.Object{OID: sha256Hex(data), Size: int64(len(data))}
	xet := []string{"basic", "xet"}
	probe := "/v1/chunks/default/" + hash.Chunk(data).String() // a miss (404) for any valid token

	res, br := e.batch("org/repo", batchBody("upload", xet, obj), servertest.Basic("alice", alicePW)...)
	if res.status != 200 || br.Transfer != "xet" {
		t.Fatalf("upload batch: %v", res)
	}
	up := br.Objects[0].Actions["upload"]
	refresh := up.Header["Authorization"]
	c, err := e.srv.tokens.Verify(refresh[len("Bearer "):])
	if err != nil || !c.Refresh || c.Scope != ScopeWrite || c.Namespace != "org/repo" || c.Subject != "alice" {
		t.Fatalf("refresh credential claims %+v %v", c, err)
	}
	if res := e.do("GET", probe, nil, servertest.Bearer(up.Header[lfsbatch.HeaderAccessToken])...); res.status != 404 {
		t.Fatalf("fresh CAS token: %v", res)
	}
	// The refresh credential is not a CAS token and opens no LFS object route.
	if res := e.do("GET", probe, nil, "Authorization", refresh); res.status != 401 {
		t.Fatalf("refresh credential on a CAS route: %v", res)
	}
	if res := e.do("PUT", "/org/repo.git/info/lfs/objects/"+obj.OID, data, "Authorization", refresh); res.status != 401 {
		t.Fatalf("refresh credential on an LFS route: %v", res)
	}

	// Past the CAS token's expiry, the href with the refresh credential mints a working token.
	e.clock.Advance(20 * time.Minute)
	if res := e.do("GET", probe, nil, servertest.Bearer(up.Header[lfsbatch.HeaderAccessToken])...); res.status != 401 {
		t.Fatalf("expired CAS token: %v", res)
	}
	res = e.do("GET", up.Href, nil, "Authorization", refresh)
	if res.status != 200 {
		t.Fatalf("refresh at href: %v", res)
	}
	tok := decodeJSON[casapi.Token](t, res.body)
	if c, err := e.srv.tokens.Verify(tok.AccessToken); err != nil || c.Refresh || c.Scope != ScopeWrite || c.Subject != "alice" {
		t.Fatalf("refreshed token %+v %v", c, err)
	}
	if res := e.do("GET", probe, nil, servertest.Bearer(tok.AccessToken)...); res.status != 404 {
		t.Fatalf("refreshed CAS token: %v", res)
	}
	// Only for its own repository.
	if res := e.do("GET", "/api/models/org/other/xet-write-token/main", nil, "Authorization", refresh); res.status != 403 {
		t.Fatalf("refresh credential for another repository: %v", res)
	}

	// A read user's download refresh credential cannot mint a write token. Store the object first
	// (basic PUT) so the download batch has an action to carry it.
	res, br = e.batch("org/repo", batchBody("upload", nil, obj), servertest.Basic("alice", alicePW)...)
	put := br.Objects[0].Actions["upload"]
	if res.status != 200 || put == nil {
		t.Fatalf("basic upload batch: %v", res)
	}
	if res := e.do("PUT", put.Href, data, "Authorization", put.Header["Authorization"]); res.status != 200 {
		t.Fatalf("basic PUT: %v", res)
	}
	res, br = e.batch("org/repo", batchBody("download", xet, obj), servertest.Basic("bob", bobPW)...)
	down := br.Objects[0].Actions["download"]
	if res.status != 200 || down == nil {
		t.Fatalf("download batch: %v", res)
	}
	readRefresh := down.Header["Authorization"]
	if c, err := e.srv.tokens.Verify(readRefresh[len("Bearer "):]); err != nil || !c.Refresh || c.Scope != ScopeRead {
		t.Fatalf("download refresh credential %+v %v", c, err)
	}
	if res := e.do("GET", "/api/models/org/repo/xet-write-token/main", nil, "Authorization", readRefresh); res.status != 403 {
		t.Fatalf("read refresh credential minting a write token: %v", res)
	}
	if res := e.do("GET", "/api/models/org/repo/xet-read-token/main", nil, "Authorization", readRefresh); res.status != 200 {
		t.Fatalf("read refresh credential minting a read token: %v", res)
	}

	// It dies with its own expiry.
	e.clock.Advance(3 * time.Hour)
	if res := e.do("GET", up.Href, nil, "Authorization", refresh); res.status != 401 {
		t.Fatalf("expired refresh credential: %v", res)
	}
}
