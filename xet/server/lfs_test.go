package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

func batchBody(op string, transfers []string, objs ...lfsbatch.Object) []byte {
	b, _ := json.Marshal(map[string]any{"operation": op, "transfers": transfers, "objects": objs, "hash_algo": "sha256"})
	return b
}

func (e *env) batch(repo string, body []byte, hdr ...string) (resp, lfsbatch.Response) {
	e.t.Helper()
	hdr = append(hdr, "Accept", contentTypeLFS, "Content-Type", contentTypeLFS)
	res := e.do("POST", "/"+repo+".git/info/lfs/objects/batch", body, hdr...)
	var br lfsbatch.Response
	if res.status == 200 {
		if ct := res.header.Get("Content-Type"); ct != contentTypeLFS {
			e.t.Fatalf("batch content type %q", ct)
		}
		br = decodeJSON[lfsbatch.Response](e.t, res.body)
	}
	return res, br
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestBatchXet(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	oid := hex.EncodeToString(r.sha[:])
	obj := lfsbatch.Object{OID: oid, Size: int64(len(r.content))}

	res, br := e.batch("org/repo", batchBody("upload", []string{"basic", "lfs-standalone-file", "xet"}, obj))
	if res.status != 200 || br.Transfer != "xet" || len(br.Objects) != 1 {
		t.Fatalf("upload batch: %v", res)
	}
	up := br.Objects[0].Actions["upload"]
	if up == nil || up.Href != e.base+"/api/models/org/repo/xet-write-token/main" {
		t.Fatalf("upload action %+v", up)
	}
	h := up.Header
	if h[lfsbatch.HeaderCasURL] != e.base || h[lfsbatch.HeaderSessionID] == "" || h[lfsbatch.HeaderTokenExpiration] == "" {
		t.Fatalf("upload headers %v", h)
	}
	c, err := e.srv.tokens.Verify(h[lfsbatch.HeaderAccessToken])
	if err != nil || c.Scope != ScopeWrite || c.Namespace != "org/repo" || strconv.FormatInt(c.Exp, 10) != h[lfsbatch.HeaderTokenExpiration] {
		t.Fatalf("write token claims %+v %v", c, err)
	}
	// Upload through the CAS with that token; the object is then known: no actions.
	e.uploadRef(r, servertest.Bearer(h[lfsbatch.HeaderAccessToken])...)
	_, br = e.batch("org/repo", batchBody("upload", []string{"basic", "xet"}, obj))
	if br.Objects[0].Actions != nil || br.Objects[0].Error != nil {
		t.Fatalf("known object got %+v", br.Objects[0])
	}
	// Another repository does not have it.
	_, br = e.batch("org/other", batchBody("upload", []string{"xet"}, obj))
	if br.Objects[0].Actions["upload"] == nil {
		t.Fatalf("object of another repository counted as present: %+v", br.Objects[0])
	}

	// Download: read token and X-Xet-Hash.
	missing := lfsbatch.Object{OID: strings.Repeat("ab", 32), Size: 5}
	_, br = e.batch("org/repo", batchBody("download", []string{"basic", "xet"}, obj, missing))
	if br.Transfer != "xet" || len(br.Objects) != 2 {
		t.Fatalf("download batch %+v", br)
	}
	dl := br.Objects[0].Actions["download"]
	if dl == nil || dl.Href != e.base+"/api/models/org/repo/xet-read-token/main" || dl.Header[lfsbatch.HeaderXetHash] != r.fileHash.String() {
		t.Fatalf("download action %+v", dl)
	}
	if c, err := e.srv.tokens.Verify(dl.Header[lfsbatch.HeaderAccessToken]); err != nil || c.Scope != ScopeRead {
		t.Fatalf("download token %+v %v", c, err)
	}
	// The uploaded file was hashed to its oid when its shard was registered: the agent may leave the
	// download's SHA-256 to git-lfs.
	if dl.Header[lfsbatch.HeaderSHA256Verified] != "true" {
		t.Fatalf("download of a verified mapping without %s: %v", lfsbatch.HeaderSHA256Verified, dl.Header)
	}
	if er := br.Objects[1].Error; er == nil || er.Code != 404 || br.Objects[1].Actions != nil {
		t.Fatalf("unknown object %+v", br.Objects[1])
	}
	// Datasets and branch refs map to the Hub's route shape.
	body, _ := json.Marshal(map[string]any{"operation": "upload", "transfers": []string{"xet"}, "ref": map[string]string{"name": "refs/heads/dev"}, "objects": []lfsbatch.Object{obj}})
	_, br = e.batch("datasets/org/data", body)
	if got := br.Objects[0].Actions["upload"].Href; got != e.base+"/api/datasets/org/data/xet-write-token/dev" {
		t.Fatalf("dataset refresh route %q", got)
	}
}

func TestBatchBadRequests(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Limits.JSON = 4096 })
	for name, c := range map[string]struct {
		body   string
		status int
	}{
		"not json":      {"{nope", 400},
		"bad operation": {`{"operation":"delete","objects":[]}`, 422},
		"hash algo":     {`{"operation":"upload","hash_algo":"md5","objects":[]}`, 409},
		"too large":     {`{"operation":"upload","objects":[` + strings.Repeat(`{"oid":"x","size":1},`, 400) + `{}]}`, 413},
	} {
		res, _ := e.batch("org/repo", []byte(c.body))
		if res.status != c.status || res.header.Get("Content-Type") != contentTypeLFS {
			t.Fatalf("%s: %v", name, res)
		}
		if m := decodeJSON[lfsError](t, res.body).Message; m == "" {
			t.Fatalf("%s: no message", name)
		}
	}
	res, br := e.batch("org/repo", batchBody("upload", nil, lfsbatch.Object{OID: "NOTHEX", Size: 1}, lfsbatch.Object{OID: strings.Repeat("A", 64), Size: 1}, lfsbatch.Object{OID: strings.Repeat("a", 64), Size: -1}))
	if res.status != 200 {
		t.Fatal(res)
	}
	for i, o := range br.Objects {
		if o.Error == nil || o.Error.Code != 422 {
			t.Fatalf("object %d: %+v", i, o)
		}
	}
	if res := e.do("POST", "/org/re%24po.git/info/lfs/objects/batch", batchBody("upload", nil)); res.status != 404 {
		t.Fatalf("bad repo name: %v", res)
	}
}

// Basic transfer through the bridge: PUT stores (chunked into xorbs + shard by the server), GET
// streams back, verify confirms; a body whose SHA-256 is not the oid is refused and not registered.
func TestBasicTransferBridge(t *testing.T) {
	testBasicTransferBridge(t, newEnv(t, nil))
}

func testBasicTransferBridge(t *testing.T, e *env) {
	data := vectors.SplitMix(300_000, 7)
	oid := sha256Hex(data)
	obj := lfsbatch.Object{OID: oid, Size: int64(len(data))}

	_, br := e.batch("team/x", batchBody("upload", nil, obj))
	if br.Transfer != "basic" {
		t.Fatalf("transfer %q", br.Transfer)
	}
	up, verify := br.Objects[0].Actions["upload"], br.Objects[0].Actions["verify"]
	if up == nil || verify == nil || up.Href != e.base+"/team/x.git/info/lfs/objects/"+oid || !strings.HasPrefix(up.Header["Authorization"], "Bearer ") {
		t.Fatalf("basic upload actions %+v", br.Objects[0].Actions)
	}
	// Wrong bytes for the oid: 400, nothing registered.
	bad := append([]byte{}, data...)
	bad[1000] ^= 0xFF
	res := e.do("PUT", up.Href, bad, "Authorization", up.Header["Authorization"])
	if res.status != 400 || !strings.Contains(decodeJSON[lfsError](t, res.body).Message, "SHA-256") {
		t.Fatalf("mismatched upload: %v", res)
	}
	vb, _ := json.Marshal(obj)
	if res := e.do("POST", verify.Href, vb); res.status != 404 {
		t.Fatalf("verify after a refused upload: %v", res)
	}
	if res := e.do("PUT", up.Href, data[:1000]); res.status != 400 {
		t.Fatalf("short upload: %v", res)
	}
	// The right bytes.
	if res := e.do("PUT", up.Href, data, "Authorization", up.Header["Authorization"]); res.status != 200 {
		t.Fatalf("upload: %v", res)
	}
	if res := e.do("POST", verify.Href, vb); res.status != 200 {
		t.Fatalf("verify: %v", res)
	}
	wrongSize, _ := json.Marshal(lfsbatch.Object{OID: oid, Size: 5})
	if res := e.do("POST", verify.Href, wrongSize); res.status != 422 {
		t.Fatalf("verify with wrong size: %v", res)
	}
	// Download.
	_, br = e.batch("team/x", batchBody("download", []string{"basic"}, obj))
	dl := br.Objects[0].Actions["download"]
	if dl == nil || dl.Href != up.Href {
		t.Fatalf("download action %+v", br.Objects[0])
	}
	res = e.do("GET", dl.Href, nil, "Authorization", dl.Header["Authorization"])
	if res.status != 200 || !bytes.Equal(res.body, data) || res.header.Get("Content-Length") != strconv.Itoa(len(data)) {
		t.Fatalf("download: %d, %d bytes", res.status, len(res.body))
	}
	res = e.do("GET", dl.Href, nil, "Range", "bytes=100000-200000")
	if res.status != 206 || !bytes.Equal(res.body, data[100000:200001]) || res.header.Get("Content-Range") != fmt.Sprintf("bytes 100000-200000/%d", len(data)) {
		t.Fatalf("ranged download: %d %v", res.status, res.header)
	}
	if res := e.do("GET", dl.Href, nil, "Range", "bytes=400000-"); res.status != 416 {
		t.Fatalf("download past end: %v", res)
	}
	if res := e.do("HEAD", dl.Href, nil); res.status != 200 || res.header.Get("Content-Length") != strconv.Itoa(len(data)) {
		t.Fatalf("HEAD: %v", res)
	}
	if res := e.do("GET", "/team/x.git/info/lfs/objects/"+strings.Repeat("0", 64), nil); res.status != 404 {
		t.Fatalf("unknown object: %v", res)
	}
	if res := e.do("GET", "/team/other.git/info/lfs/objects/"+oid, nil); res.status != 404 {
		t.Fatalf("object of another repository: %v", res)
	}
	// The same bytes stored by the bridge can be planned by the CAS (X-Xet-Hash of the bridge).
	res = e.do("HEAD", dl.Href, nil)
	fh := res.header.Get("X-Xet-Hash")
	if res := e.do("HEAD", "/v1/files/"+fh, nil); res.status != 200 || res.header.Get("Content-Length") != strconv.Itoa(len(data)) {
		t.Fatalf("file %q of the bridge upload: %v", fh, res)
	}
}

const (
	alicePW = "alice-secret-password"
	bobPW   = "bob-secret-password"
)

func TestLFSAuth(t *testing.T) {
	users := "# team\n" + servertest.UserLine("alice", alicePW, "") + servertest.UserLine("bob", bobPW, ":read:org/*")
	e := newEnv(t, func(c *Config) { c.Users = mustUsers(t, users) })
	data := vectors.SplitMix(20_000, 3)
	obj := lfsbatch.Object{OID: sha256Hex(data), Size: int64(len(data))}
	up := batchBody("upload", nil, obj)
	down := batchBody("download", nil, obj)

	res, _ := e.batch("org/repo", up)
	if res.status != 401 || res.header.Get("LFS-Authenticate") == "" || !strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("no credentials: %v %v", res, res.header)
	}
	if res, _ := e.batch("org/repo", up, servertest.Basic("alice", "wrong")...); res.status != 401 {
		t.Fatalf("wrong password: %v", res)
	}
	if res, _ := e.batch("org/repo", up, servertest.Basic("mallory", alicePW)...); res.status != 401 {
		t.Fatalf("unknown user: %v", res)
	}
	// Right after a wrong password, alice from the same address waits out the window (no KDF runs).
	if res, _ := e.batch("org/repo", up, servertest.Basic("alice", alicePW)...); res.status != 429 || res.header.Get("Retry-After") != "2" {
		t.Fatalf("alice right after a wrong password: %v %v", res, res.header)
	}
	e.clock.Advance(failWindow)
	if res, _ := e.batch("org/repo", up, servertest.Basic("bob", bobPW)...); res.status != 403 {
		t.Fatalf("read-only user uploading: %v", res)
	}
	if res, _ := e.batch("elsewhere/repo", down, servertest.Basic("bob", bobPW)...); res.status != 403 {
		t.Fatalf("user outside his repositories: %v", res)
	}
	res, br := e.batch("org/repo", up, servertest.Basic("alice", alicePW)...)
	if res.status != 200 {
		t.Fatalf("alice upload batch: %v", res)
	}
	a := br.Objects[0].Actions["upload"]
	// The action's bearer token is enough for the PUT, and only for this repository.
	if res := e.do("PUT", a.Href, data); res.status != 401 {
		t.Fatalf("PUT without credentials: %v", res)
	}
	if res := e.do("PUT", "/org/other.git/info/lfs/objects/"+obj.OID, data, "Authorization", a.Header["Authorization"]); res.status != 403 {
		t.Fatalf("PUT with another repository's token: %v", res)
	}
	if res := e.do("PUT", a.Href, data, "Authorization", a.Header["Authorization"]); res.status != 200 {
		t.Fatalf("PUT with the action token: %v", res)
	}
	res, br = e.batch("org/repo", down, servertest.Basic("bob", bobPW)...)
	d := br.Objects[0].Actions["download"]
	if res.status != 200 || d == nil {
		t.Fatalf("bob download batch: %v", res)
	}
	if res := e.do("PUT", d.Href, data, "Authorization", d.Header["Authorization"]); res.status != 403 {
		t.Fatalf("PUT with a read token: %v", res)
	}
	if res := e.do("GET", d.Href, nil, "Authorization", d.Header["Authorization"]); res.status != 200 || !bytes.Equal(res.body, data) {
		t.Fatalf("GET with the read token: %d", res.status)
	}

	// Token routes.
	wt := "/api/models/org/repo/xet-write-token/main"
	rt := "/api/models/org/repo/xet-read-token/main"
	if res := e.do("GET", wt, nil); res.status != 401 {
		t.Fatalf("token route without credentials: %v", res)
	}
	if res := e.do("GET", wt, nil, servertest.Basic("bob", bobPW)...); res.status != 403 {
		t.Fatalf("write token for a read-only user: %v", res)
	}
	res = e.do("GET", rt, nil, servertest.Basic("bob", bobPW)...)
	tok := decodeJSON[casapi.Token](t, res.body)
	if res.status != 200 || tok.CasURL != e.base || tok.Exp <= e.clock.Now().Unix() {
		t.Fatalf("read token route: %v", res)
	}
	if c, err := e.srv.tokens.Verify(tok.AccessToken); err != nil || c.Scope != ScopeRead || c.Namespace != "org/repo" || c.Subject != "bob" {
		t.Fatalf("read token %+v %v", c, err)
	}
	res = e.do("GET", wt, nil, servertest.Basic("alice", alicePW)...)
	tok = decodeJSON[casapi.Token](t, res.body)
	if c, err := e.srv.tokens.Verify(tok.AccessToken); res.status != 200 || err != nil || c.Scope != ScopeWrite {
		t.Fatalf("write token route: %v %+v %v", res, c, err)
	}
	// A token cannot mint tokens.
	if res := e.do("GET", rt, nil, servertest.Bearer(tok.AccessToken)...); res.status != 401 {
		t.Fatalf("token route with a bearer token: %v", res)
	}
	if res := e.do("GET", "/api/widgets/org/repo/xet-read-token/main", nil, servertest.Basic("alice", alicePW)...); res.status != 404 {
		t.Fatalf("unknown repo type: %v", res)
	}
	// Credentials never reach the logs.
	if logs := e.logs.String(); strings.Contains(logs, alicePW) || strings.Contains(logs, "Basic ") || strings.Contains(logs, tok.AccessToken[:20]) {
		t.Fatalf("secret in logs: %s", logs)
	}
}

func TestOpenModeTokenRoute(t *testing.T) {
	e := newEnv(t, nil)
	res := e.do("GET", "/api/datasets/org/data/xet-write-token/refs%2Fheads%2Fmain?create_pr=1", nil)
	tok := decodeJSON[casapi.Token](t, res.body)
	c, err := e.srv.tokens.Verify(tok.AccessToken)
	if res.status != 200 || err != nil || c.Namespace != "datasets/org/data" || c.Scope != ScopeWrite {
		t.Fatalf("open token route: %v %+v %v", res, c, err)
	}
}

// huggingface.js's commit path names SHA-256 "sha_256"; git-lfs "sha256" or nothing. All three are
// answered alike (with "sha256"), as the Hub does.
func TestBatchHashAlgoSpellings(t *testing.T) {
	e := newEnv(t, nil)
	oid := strings.Repeat("ab", 32)
	for _, algo := range []string{`"sha256"`, `"sha_256"`, `""`} {
		body := `{"operation":"upload","transfers":["basic","multipart","xet"],"hash_algo":` + algo +
			`,"objects":[{"oid":"` + oid + `","size":5}]}`
		res, br := e.batch("org/repo", []byte(body))
		if res.status != 200 || br.HashAlgo != "sha256" || len(br.Objects) != 1 || br.Objects[0].Actions["upload"] == nil {
			t.Fatalf("hash_algo %s: %v %+v", algo, res, br)
		}
	}
}

// An oid is a SHA-256 in lowercase hex, as git-lfs writes it (internal/lfsobject): the basic
// routes refuse another spelling of the same digest instead of storing and serving it under a
// second name.
func TestBasicTransferRefusesUppercaseOid(t *testing.T) {
	e := newEnv(t, nil)
	data := vectors.SplitMix(1000, 8)
	oid := sha256Hex(data)
	_, br := e.batch("team/x", batchBody("upload", nil, lfsbatch.Object{OID: oid, Size: int64(len(data))}))
	up := br.Objects[0].Actions["upload"]
	if up == nil {
		t.Fatalf("no upload action: %+v", br.Objects[0])
	}
	upper := strings.Replace(up.Href, oid, strings.ToUpper(oid), 1)
	if res := e.do("PUT", upper, data, "Authorization", up.Header["Authorization"]); res.status != 400 {
		t.Fatalf("PUT of an uppercase oid: %v, want 400", res)
	}
	if res := e.do("GET", upper, nil, "Authorization", up.Header["Authorization"]); res.status == 200 {
		t.Fatalf("GET of an uppercase oid: %v", res)
	}
}

// A mapping an older store wrote without hashing the file (it may be wrong) is still served, but
// its download action does not say it was verified: the agent then checks the SHA-256 itself and
// names the Xet file when it is wrong.
func TestBatchDownloadSaysWhetherTheMappingWasVerified(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	e.uploadRef(r, servertest.Bearer(e.token("alice", "org/repo", ScopeWrite, time.Minute))...)

	// The legacy mapping: another oid, recorded (unverified) for the same file.
	ctx := context.Background()
	names, err := e.st.Backend().List(ctx, "ns/")
	if err != nil {
		t.Fatal(err)
	}
	var verifiedName string
	for _, n := range names {
		if path.Base(path.Dir(n)) == "sha256v" && path.Base(n) == hex.EncodeToString(r.sha[:]) {
			verifiedName = n
		}
	}
	if verifiedName == "" {
		t.Fatalf("no verified mapping of the uploaded file among %v", names)
	}
	b, err := e.st.Backend().Open(ctx, verifiedName)
	if err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, b.Size())
	_, err = b.ReadAt(ctx, rec, 0)
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	legacyOID := strings.Repeat("5e", 32)
	legacyName := path.Join(path.Dir(path.Dir(verifiedName)), "sha256", legacyOID)
	if _, err := e.st.Backend().Create(ctx, legacyName, bytes.NewReader(rec)); err != nil {
		t.Fatal(err)
	}

	size := int64(len(r.content))
	_, br := e.batch("org/repo", batchBody("download", []string{"xet"},
		lfsbatch.Object{OID: hex.EncodeToString(r.sha[:]), Size: size}, lfsbatch.Object{OID: legacyOID, Size: size}))
	if len(br.Objects) != 2 {
		t.Fatalf("download batch %+v", br)
	}
	for i, want := range []string{"true", ""} {
		dl := br.Objects[i].Actions["download"]
		if dl == nil || dl.Header[lfsbatch.HeaderXetHash] != r.fileHash.String() {
			t.Fatalf("object %d: download action %+v", i, dl)
		}
		if got := dl.Header[lfsbatch.HeaderSHA256Verified]; got != want {
			t.Errorf("object %d (%s): %s %q, want %q", i, br.Objects[i].OID, lfsbatch.HeaderSHA256Verified, got, want)
		}
	}
	// An upload of the legacy oid is not skipped: it repairs the mapping.
	_, br = e.batch("org/repo", batchBody("upload", []string{"xet"}, lfsbatch.Object{OID: legacyOID, Size: size}))
	if br.Objects[0].Actions["upload"] == nil {
		t.Fatalf("upload of an unverified mapping skipped: %+v", br.Objects[0])
	}
}
