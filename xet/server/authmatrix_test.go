package server

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// The auth matrix: every route of the server against every kind of credential, each cell with the
// exact status the design gives it (see "How access works" in README-section.md):
//
//   - CAS routes take only bearer tokens the server issued: missing, bad, expired or refresh
//     credentials get 401, a token whose scope is too small 403. A Basic credential is no
//     credential there (401). A file hash is a read capability across the whole CAS by design, so a
//     valid CAS token of another repository is not a denied credential on CAS routes and is not in
//     their rows.
//   - Signed routes (/xorbs/, and in Hub mode /xet-bridge-us/, /cdn-lfs/) answer 403 to anything
//     but a valid, unexpired signature, as a CDN does.
//   - LFS and token routes: a missing or bad credential 401, a valid one without the access 403. In
//     Hub mode a credential that cannot see the repository gets 404 RepoNotFound (the Hub hides
//     repositories), a read-only one writing 403.
//
// Every route also has a positive control (the right credential gets its exact 2xx, carrying the
// data where the route serves data), so a denied cell cannot pass because the route is broken.
// Denied answers must not carry stored bytes, URLs or tokens that grant access, or the credential.

// amCred is one credential: the headers it sends (or, for a signed route, the URL it fetches) and the
// secrets no answer may echo.
type amCred struct {
	hdr     []string
	url     string
	secrets []string
}

// codes maps a credential name to the exact status of a cell.
type codes = map[string]int

// amRoute is one row of the matrix: a request, the credentials that must be allowed (the positive
// controls) and those that must be denied, each with its exact status.
type amRoute struct {
	name   string
	method string
	path   string
	body   []byte
	hdr    []string          // sent with every credential (Range)
	creds  map[string]amCred // credentials of this row only (signed URLs)
	allow  codes
	deny   codes
	data   []byte // what an allowed answer carries; nil when the route serves no data
}

// amMatrix is a server holding real data, the credentials thrown at it, and the needles (stored
// bytes, grants) no denied answer may contain.
type amMatrix struct {
	e       *env
	r       refData
	oid     string
	content []byte // a slice of the stored file
	creds   map[string]amCred
	needles [][]byte
	// fresh lists the credentials whose every cell starts a window of its own: a wrong password
	// shuts its (user, address) out for failWindow (429), and each cell is to show the 401.
	fresh map[string]bool
}

const (
	amRepo  = "org/a"   // the repository under test; it holds the data
	amOther = "other/b" // the only repository of the "other" user
)

func with(base codes, extra codes) codes {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

func newAuthMatrix(t *testing.T, mod func(*Config)) *amMatrix {
	t.Helper()
	r := loadRef(t)
	m := &amMatrix{e: newEnv(t, mod), r: r, oid: hex.EncodeToString(r.sha[:]), creds: map[string]amCred{"none": {}}}
	m.content = r.content[400_000:400_064]
	m.needles = [][]byte{m.content, []byte("sig="), []byte("X-Amz-Signature"), []byte("accessToken"),
		[]byte(`"href"`), []byte("fetch_info"), []byte(`"terms"`)}
	return m
}

func (m *amMatrix) addBasic(name, user, pw string) {
	m.creds[name] = amCred{hdr: servertest.Basic(user, pw), secrets: []string{pw}}
}

func (m *amMatrix) addToken(name, tok string) {
	secrets := []string{tok}
	if dot := strings.LastIndexByte(tok, '.'); dot > 0 {
		secrets = append(secrets, tok[dot+1:])
	}
	m.creds[name] = amCred{hdr: servertest.Bearer(tok), secrets: secrets}
}

// mint gets a CAS token for repo from the token route with credential cred.
func (m *amMatrix) mint(repo string, scope Scope, cred string) string {
	m.e.t.Helper()
	res := m.e.do("GET", "/api/models/"+repo+"/xet-"+string(scope)+"-token/main", nil, m.creds[cred].hdr...)
	if res.status != http.StatusOK {
		m.e.t.Fatalf("minting a %s token for %s as %s: %v", scope, repo, cred, res)
	}
	return decodeJSON[casapi.Token](m.e.t, res.body).AccessToken
}

// forgeSignature changes one character in the middle of a token's MAC. (A middle character is six
// bits of the MAC; the last one of a 32-byte MAC also holds two padding bits.)
func forgeSignature(t testing.TB, tok string) string {
	t.Helper()
	i := strings.LastIndexByte(tok, '.') + 20
	if i >= len(tok) {
		t.Fatalf("token %q has no signature", tok)
	}
	b := []byte(tok)
	b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
	return string(b)
}

// forgeClaims turns a read token into a write token with a longer life, keeping its signature.
func forgeClaims(t testing.TB, tok string) string {
	t.Helper()
	dot := strings.LastIndexByte(tok, '.')
	payload, err := base64.RawURLEncoding.DecodeString(tok[len(tokenPrefix):dot])
	var c Claims
	if err != nil || json.Unmarshal(payload, &c) != nil || c.Scope != ScopeRead {
		t.Fatalf("not a read token: %q", tok)
	}
	c.Scope, c.Exp = ScopeWrite, c.Exp+86400
	p, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(p) + tok[dot:]
}

// alterParam changes one character in the middle of query parameter key of a signed URL.
func alterParam(t testing.TB, raw, key string) amCred {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	b := []byte(q.Get(key))
	if len(b) < 20 {
		t.Fatalf("%s: no %s to alter", raw, key)
	}
	b[len(b)/2] = map[bool]byte{true: 'B', false: 'A'}[b[len(b)/2] == 'A']
	q.Set(key, string(b))
	u.RawQuery = q.Encode()
	return amCred{url: u.String(), secrets: []string{string(b)}}
}

// signedCred is a signed URL as a credential; its signature is a secret no answer may echo.
func signedCred(t testing.TB, raw, key string) amCred {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return amCred{url: raw, secrets: []string{u.Query().Get(key)}}
}

// run runs every cell of routes as a subtest named by route and credential.
func (m *amMatrix) run(t *testing.T, routes []amRoute) {
	t.Helper()
	for _, rt := range routes {
		if len(rt.allow) == 0 || len(rt.deny) == 0 {
			t.Fatalf("%s: a row needs positive controls and denied credentials", rt.name)
		}
		for _, name := range slices.Sorted(maps.Keys(rt.allow)) {
			want := rt.allow[name]
			if _, both := rt.deny[name]; both || want < 200 || want > 299 {
				t.Fatalf("%s: allowed credential %s: bad cell %d", rt.name, name, want)
			}
			t.Run(rt.name+"/"+name, func(t *testing.T) { m.check(t, rt, name, want, false) })
		}
		for _, name := range slices.Sorted(maps.Keys(rt.deny)) {
			want := rt.deny[name]
			if want != 401 && want != 403 && want != 404 {
				t.Fatalf("%s: denied credential %s: bad cell %d", rt.name, name, want)
			}
			t.Run(rt.name+"/"+name, func(t *testing.T) { m.check(t, rt, name, want, true) })
		}
	}
}

func (m *amMatrix) check(t *testing.T, rt amRoute, name string, want int, denied bool) {
	cred, ok := rt.creds[name]
	if !ok {
		cred, ok = m.creds[name]
	}
	if !ok {
		t.Fatalf("unknown credential %q", name)
	}
	target := rt.path
	if cred.url != "" {
		target = cred.url
	}
	if m.fresh[name] {
		m.e.clock.Advance(failWindow)
	}
	res := m.e.do(rt.method, target, rt.body, append(slices.Clone(rt.hdr), cred.hdr...)...)
	if res.status != want {
		body := res.body[:min(len(res.body), 300)]
		t.Fatalf("%s with %s: %d %s, want %d", rt.name, name, res.status, body, want)
	}
	if !denied {
		if rt.data != nil && !bytes.Contains(res.body, rt.data) {
			t.Fatalf("%s with %s: the answer lacks the route's data (%d bytes)", rt.name, name, len(res.body))
		}
		return
	}
	if want == http.StatusUnauthorized && res.header.Get("WWW-Authenticate") == "" {
		t.Errorf("401 without WWW-Authenticate")
	}
	for _, n := range m.needles {
		if bytes.Contains(res.body, n) {
			t.Errorf("denied answer carries %.40q: %.300s", n, res.body)
		}
	}
	for _, h := range []string{lfsbatch.HeaderAccessToken, lfsbatch.HeaderXetHash, "Content-Range", "Location"} {
		if v := res.header.Get(h); v != "" {
			t.Errorf("denied answer has %s: %s", h, v)
		}
	}
	for _, s := range cred.secrets {
		if bytes.Contains(res.body, []byte(s)) || strings.Contains(strings.Join(slices.Concat(slices.Collect(maps.Values(res.header))...), "\n"), s) {
			t.Errorf("denied answer echoes the credential %.20q...", s)
		}
	}
}

// TestAuthMatrix runs the matrix against a server with a users file: rw (write, every repository),
// ro (read only), other (write, other/* only).
func TestAuthMatrix(t *testing.T) {
	users := servertest.UserLine("rw", "rw-password-1", "") + servertest.UserLine("ro", "ro-password-2", ":read") +
		servertest.UserLine("other", "other-password-3", ":write:other/*")
	m := newAuthMatrix(t, func(c *Config) { c.Users = mustUsers(t, users) })
	m.addBasic("rw-basic", "rw", "rw-password-1")
	m.addBasic("ro-basic", "ro", "ro-password-2")
	m.addBasic("other-basic", "other", "other-password-3")
	m.addBasic("bad-password", "rw", "not-the-password")
	m.fresh = map[string]bool{"bad-password": true}
	rw := m.mint(amRepo, ScopeWrite, "rw-basic")
	m.e.uploadRef(m.r, servertest.Bearer(rw)...) // the data the denied cells must not leak
	m.addToken("rw-token", rw)
	ro := m.mint(amRepo, ScopeRead, "ro-basic")
	m.addToken("ro-token", ro)
	m.addToken("other-token", m.mint(amOther, ScopeWrite, "other-basic"))
	m.addToken("expired", m.e.token("rw", amRepo, ScopeWrite, -time.Minute)) // validly signed, past expiry
	m.addToken("forged-sig", forgeSignature(t, m.mint(amRepo, ScopeWrite, "rw-basic")))
	m.addToken("forged-claims", forgeClaims(t, ro))
	m.addToken("refresh", m.refreshCredential(t))

	routes := slices.Concat(m.casRoutes(t), []amRoute{m.signedXorbRoute(t)}, m.tokenRoutes(), m.lfsRoutes())
	m.run(t, routes)
}

// refreshCredential is the Authorization of a xet download action: a read refresh credential.
func (m *amMatrix) refreshCredential(t *testing.T) string {
	t.Helper()
	obj := lfsbatch.Object{OID: m.oid, Size: int64(len(m.r.content))}
	res, br := m.e.batch(amRepo, batchBody("download", []string{"xet"}, obj), m.creds["rw-basic"].hdr...)
	if res.status != 200 || br.Transfer != "xet" || len(br.Objects) != 1 || br.Objects[0].Actions["download"] == nil {
		t.Fatalf("xet download batch: %v", res)
	}
	tok, ok := strings.CutPrefix(br.Objects[0].Actions["download"].Header["Authorization"], "Bearer ")
	if c, err := m.e.srv.tokens.Verify(tok); !ok || err != nil || !c.Refresh {
		t.Fatalf("no refresh credential in %v", res)
	}
	return tok
}

func (m *amMatrix) casRoutes(t *testing.T) []amRoute {
	file, xorb, chunk := m.r.fileHash.String(), m.r.xorbHash.String(), loadRefChunk0(t).String()
	read := codes{"rw-token": 200, "ro-token": 200}
	write := codes{"rw-token": 200}
	deny := codes{"none": 401, "ro-basic": 401, "other-basic": 401, "expired": 401, "forged-sig": 401,
		"forged-claims": 401, "refresh": 401}
	denyWrite := with(deny, codes{"ro-token": 403})
	return []amRoute{
		{name: "GET /v1/reconstructions/{file}", method: "GET", path: "/v1/reconstructions/" + file,
			allow: read, deny: deny, data: []byte("sig=")},
		{name: "GET /v2/reconstructions/{file}", method: "GET", path: "/v2/reconstructions/" + file,
			allow: read, deny: deny, data: []byte("sig=")},
		{name: "GET /v1/chunks/{prefix}/{chunk}", method: "GET", path: "/v1/chunks/default-merkledb/" + chunk,
			allow: read, deny: deny, data: m.r.xorbHash[:]},
		{name: "POST /v1/xorbs/{prefix}/{xorb}", method: "POST", path: "/v1/xorbs/default/" + xorb,
			body: m.r.xorbBody, allow: write, deny: denyWrite},
		{name: "HEAD /v1/xorbs/{prefix}/{xorb}", method: "HEAD", path: "/v1/xorbs/default/" + xorb,
			allow: read, deny: deny},
		{name: "POST /v1/shards", method: "POST", path: "/v1/shards", body: m.r.shard, allow: write, deny: denyWrite},
		{name: "POST /v2/shards", method: "POST", path: "/v2/shards", body: m.r.shard, allow: write, deny: denyWrite,
			data: []byte(`"result"`)},
		{name: "HEAD /v1/files/{file}", method: "HEAD", path: "/v1/files/" + file, allow: read, deny: deny},
	}
}

// signedXorbRoute is GET /xorbs/{prefix}/{xorb} with the URL and Range of a real v2 plan.
func (m *amMatrix) signedXorbRoute(t *testing.T) amRoute {
	t.Helper()
	res := m.e.do("GET", "/v2/reconstructions/"+m.r.fileHash.String(), nil, m.creds["rw-token"].hdr...)
	p := decodeJSON[casapi.ReconstructionV2](t, res.body)
	fetches := p.Xorbs[m.r.xorbHash]
	if res.status != 200 || len(fetches) == 0 || len(fetches[0].Ranges) == 0 {
		t.Fatalf("v2 plan: %v", res)
	}
	f, rg := fetches[0], fetches[0].Ranges[0].Bytes
	if rg.Len() < 128 {
		t.Fatalf("signed range %v too short to check", rg)
	}
	mid := (rg.Start + rg.End) / 2
	data := m.r.xorbBody[mid : mid+64]
	m.needles = append(m.needles, data)
	u, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	expired := m.e.srv.urls.Sign(m.e.base, m.r.xorbHash, []casapi.ByteRange{rg}, -time.Minute)
	return amRoute{
		name: "GET /xorbs/{prefix}/{xorb} (signed)", method: "GET", path: u.Path, hdr: []string{"Range", rg.Header()},
		creds: map[string]amCred{
			"signed-url":  signedCred(t, f.URL, "sig"),
			"expired-url": signedCred(t, expired, "sig"),
			"altered-sig": alterParam(t, f.URL, "sig"),
		},
		allow: codes{"signed-url": 206},
		deny:  codes{"none": 403, "rw-token": 403, "expired-url": 403, "altered-sig": 403},
		data:  data,
	}
}

func (m *amMatrix) tokenRoutes() []amRoute {
	deny := codes{"none": 401, "bad-password": 401, "other-basic": 403, "expired": 401, "forged-sig": 401,
		"forged-claims": 401, "rw-token": 401, "other-token": 401}
	return []amRoute{
		{name: "GET /api/{type}s/{repo}/xet-read-token/{rev}", method: "GET",
			path:  "/api/models/" + amRepo + "/xet-read-token/main",
			allow: codes{"rw-basic": 200, "ro-basic": 200, "refresh": 200}, deny: deny, data: []byte("accessToken")},
		{name: "GET /api/{type}s/{repo}/xet-write-token/{rev}", method: "GET",
			path:  "/api/models/" + amRepo + "/xet-write-token/main",
			allow: codes{"rw-basic": 200}, deny: with(deny, codes{"ro-basic": 403, "refresh": 403}),
			data: []byte("accessToken")},
	}
}

func (m *amMatrix) lfsRoutes() []amRoute {
	obj := lfsbatch.Object{OID: m.oid, Size: int64(len(m.r.content))}
	verify, _ := json.Marshal(obj)
	lfs := "/" + amRepo + ".git/info/lfs/"
	read := codes{"rw-basic": 200, "ro-basic": 200, "ro-token": 200}
	write := codes{"rw-basic": 200, "rw-token": 200}
	deny := codes{"none": 401, "bad-password": 401, "other-basic": 403, "other-token": 403, "expired": 401,
		"forged-sig": 401, "forged-claims": 401, "refresh": 401}
	denyWrite := with(deny, codes{"ro-basic": 403, "ro-token": 403})
	// The batch route mints tokens: it takes no token of the server's, so none gets a new life.
	batchDeny := with(deny, codes{"ro-token": 401, "rw-token": 401, "other-token": 401})
	return []amRoute{
		{name: "POST /{repo}.git/info/lfs/objects/batch (download)", method: "POST", path: lfs + "objects/batch",
			body: batchBody("download", nil, obj), allow: codes{"rw-basic": 200, "ro-basic": 200}, deny: batchDeny,
			data: []byte(`"href"`)},
		{name: "POST /{repo}.git/info/lfs/objects/batch (upload)", method: "POST", path: lfs + "objects/batch",
			body: batchBody("upload", nil, obj), allow: codes{"rw-basic": 200}, deny: with(batchDeny, codes{"ro-basic": 403})},
		{name: "GET /{repo}.git/info/lfs/objects/{oid}", method: "GET", path: lfs + "objects/" + m.oid,
			allow: read, deny: deny, data: m.content},
		{name: "HEAD /{repo}.git/info/lfs/objects/{oid}", method: "HEAD", path: lfs + "objects/" + m.oid,
			allow: read, deny: deny},
		{name: "PUT /{repo}.git/info/lfs/objects/{oid}", method: "PUT", path: lfs + "objects/" + m.oid,
			body: m.r.content, allow: write, deny: denyWrite},
		{name: "POST /{repo}.git/info/lfs/verify", method: "POST", path: lfs + "verify", body: verify,
			allow: write, deny: denyWrite},
	}
}

const (
	amHubRW    = "hf_matrix_rw_0123456789"
	amHubRO    = "hf_matrix_ro_0123456789"
	amHubOther = "hf_matrix_other_0123456789"
)

// TestAuthMatrixHub runs the matrix against the Hub emulator: Hub tokens instead of users, bridge
// and CDN URLs for downloads.
func TestAuthMatrixHub(t *testing.T) {
	toks, err := ParseHubTokens(strings.NewReader(amHubRW + ":w:write\n" + amHubRO + ":r:read\n" +
		amHubOther + ":o:write:other/*\n"))
	if err != nil {
		t.Fatal(err)
	}
	legacyDir := t.TempDir()
	m := newAuthMatrix(t, func(c *Config) { c.Hub = &HubCompat{Tokens: toks, LegacyDir: legacyDir} })
	m.addToken("hub-rw", amHubRW)
	m.addToken("hub-ro", amHubRO)
	m.addToken("hub-other", amHubOther)
	m.addToken("bad-hub-token", "hf_matrix_unknown_0123456789")
	cas := m.mint(amRepo, ScopeWrite, "hub-rw")
	m.e.uploadRef(m.r, servertest.Bearer(cas)...)
	legacy := []byte("a legacy object pushed with the basic transfer, kept whole: 7f3e9a")
	legacyOID := sha256Hex(legacy)
	if res := m.e.do("PUT", "/"+amRepo+".git/info/lfs/objects/"+legacyOID, legacy, m.creds["hub-rw"].hdr...); res.status != 200 {
		t.Fatalf("legacy PUT: %v", res)
	}
	m.needles = append(m.needles, legacy)
	m.addToken("expired", m.e.token("", amRepo, ScopeWrite, -time.Minute))
	m.addToken("forged-sig", forgeSignature(t, cas))
	m.addToken("other-token", m.mint(amOther, ScopeWrite, "hub-other"))
	m.addToken("own-token", cas)

	bridge, cdn := m.hubDownloadURLs(t, legacyOID, len(legacy))
	routes := slices.Concat(m.hubLFSRoutes(legacyOID, legacy), []amRoute{
		m.hubSignedRoute(t, "GET /xet-bridge-us/{id}/{file}", bridge, m.content),
		m.hubSignedRoute(t, "GET /cdn-lfs/{id}/{oid}", cdn, legacy),
	})
	m.run(t, routes)
}

// hubDownloadURLs gets the bridge URL of the Xet file and the CDN URL of the legacy object from a
// download batch.
func (m *amMatrix) hubDownloadURLs(t *testing.T, legacyOID string, legacySize int) (bridge, cdn string) {
	t.Helper()
	body := batchBody("download", []string{"basic"}, lfsbatch.Object{OID: m.oid, Size: int64(len(m.r.content))},
		lfsbatch.Object{OID: legacyOID, Size: int64(legacySize)})
	res, br := m.e.batch(amRepo, body, m.creds["hub-rw"].hdr...)
	if res.status != 200 || len(br.Objects) != 2 {
		t.Fatalf("download batch: %v", res)
	}
	for i, want := range []string{"/xet-bridge-us/", "/cdn-lfs/"} {
		a := br.Objects[i].Actions["download"]
		if a == nil || !strings.Contains(a.Href, want) {
			t.Fatalf("object %d: want a %s URL: %v", i, want, res)
		}
	}
	return br.Objects[0].Actions["download"].Href, br.Objects[1].Actions["download"].Href
}

func (m *amMatrix) hubLFSRoutes(legacyOID string, legacy []byte) []amRoute {
	obj := lfsbatch.Object{OID: m.oid, Size: int64(len(m.r.content))}
	verify, _ := json.Marshal(obj)
	lfs := "/" + amRepo + ".git/info/lfs/"
	read := codes{"hub-rw": 200, "hub-ro": 200}
	write := codes{"hub-rw": 200}
	deny := codes{"none": 401, "bad-hub-token": 401, "hub-other": 404, "other-token": 403, "expired": 401,
		"forged-sig": 401}
	denyWrite := with(deny, codes{"hub-ro": 403})
	// A CAS token, even of this repository, mints no new tokens (neither at the token routes nor at
	// the batch route): one that leaks dies when it expires.
	casTokens := codes{"other-token": 401, "own-token": 401}
	return []amRoute{
		{name: "hub POST /{repo}.git/info/lfs/objects/batch (download)", method: "POST", path: lfs + "objects/batch",
			body: batchBody("download", nil, obj), allow: read, deny: with(deny, casTokens), data: []byte(`"href"`)},
		{name: "hub POST /{repo}.git/info/lfs/objects/batch (upload)", method: "POST", path: lfs + "objects/batch",
			body: batchBody("upload", nil, obj), allow: write, deny: with(denyWrite, casTokens)},
		{name: "hub GET /{repo}.git/info/lfs/objects/{oid}", method: "GET", path: lfs + "objects/" + m.oid,
			allow: read, deny: deny, data: m.content},
		{name: "hub PUT /{repo}.git/info/lfs/objects/{oid}", method: "PUT", path: lfs + "objects/" + legacyOID,
			body: legacy, allow: write, deny: denyWrite},
		{name: "hub POST /{repo}.git/info/lfs/verify", method: "POST", path: lfs + "verify", body: verify,
			allow: write, deny: denyWrite},
		{name: "hub GET /api/{type}s/{repo}/xet-read-token/{rev}", method: "GET",
			path:  "/api/models/" + amRepo + "/xet-read-token/main",
			allow: read, deny: with(deny, casTokens), data: []byte("accessToken")},
		{name: "hub GET /api/{type}s/{repo}/xet-write-token/{rev}", method: "GET",
			path:  "/api/models/" + amRepo + "/xet-write-token/main",
			allow: write, deny: with(denyWrite, casTokens), data: []byte("accessToken")},
	}
}

// hubSignedRoute is a bridge or CDN URL: only its unexpired signature opens it, not a Hub token.
func (m *amMatrix) hubSignedRoute(t *testing.T, name, href string, data []byte) amRoute {
	t.Helper()
	u, err := url.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	expired := m.e.srv.urls.SignPath(m.e.base, u.Path, -time.Minute)
	return amRoute{
		name: name, method: "GET", path: u.Path,
		creds: map[string]amCred{
			"signed-url":  signedCred(t, href, "X-Amz-Signature"),
			"expired-url": signedCred(t, expired, "X-Amz-Signature"),
			"altered-sig": alterParam(t, href, "X-Amz-Signature"),
		},
		allow: codes{"signed-url": 200},
		deny:  codes{"none": 403, "hub-rw": 403, "expired-url": 403, "altered-sig": 403},
		data:  data,
	}
}

// paddingTwin returns s (unpadded base64url of 32 bytes, 43 characters) with its last character
// changed in the two bits that encode nothing: a lenient decoder reads the same bytes.
func paddingTwin(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[i^1])
}

// A signature is one text: its base64 with the unused low bits of the last character set
// otherwise decodes to the same bytes, and is refused all the same (tokens, signed URLs).
func TestSignaturesDecodeStrictly(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	toks := NewTokens(secret, time.Now)
	tok, err := toks.Issue(Claims{Namespace: "org/a", Scope: ScopeRead, Exp: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toks.Verify(tok); err != nil {
		t.Fatal(err)
	}
	if _, err := toks.Verify(paddingTwin(tok)); err == nil {
		t.Error("a token whose signature differs in its padding bits was accepted")
	}
	signer := NewURLSigner(secret, time.Now)
	u, err := url.Parse(signer.SignPath("http://x", "/cdn-lfs/abc", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if err := signer.CheckPath(u.Path, q); err != nil {
		t.Fatal(err)
	}
	q.Set("X-Amz-Signature", paddingTwin(q.Get("X-Amz-Signature")))
	if err := signer.CheckPath(u.Path, q); err == nil {
		t.Error("a signed URL whose signature differs in its padding bits was accepted")
	}
}
