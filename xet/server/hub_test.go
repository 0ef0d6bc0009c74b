package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

const (
	hubWriter = "hf_writer000000000000"
	hubReader = "hf_reader000000000000"
)

func newHubEnv(t *testing.T) *env {
	t.Helper()
	toks, err := ParseHubTokens(strings.NewReader("# tokens\n" + hubWriter + ":w:write\n" + hubReader + ":r:read:org/*,datasets/org/*,spaces/org/*\n"))
	if err != nil {
		t.Fatal(err)
	}
	legacy := t.TempDir()
	return newEnv(t, func(c *Config) {
		c.Hub = &HubCompat{Tokens: toks, LegacyDir: legacy, Public: []string{"pub/*"}}
	})
}

// hubBatch is a batch request for one object, with a ref when ref is not "".
func hubBatch(op string, transfers []string, ref string, oid string, size int) []byte {
	r := ""
	if ref != "" {
		r = `,"ref":{"name":"` + ref + `"}`
	}
	tr := `"` + strings.Join(transfers, `","`) + `"`
	return fmt.Appendf(nil, `{"operation":"%s","transfers":[%s]%s,"objects":[{"oid":"%s","size":%d}]}`, op, tr, r, oid, size)
}

func TestHubTokenRoutes(t *testing.T) {
	e := newHubEnv(t)
	for _, tc := range []struct {
		path  string
		tok   string
		want  int
		code  string
		write bool
	}{
		{"/api/models/org/m/xet-read-token/main", hubReader, 200, "", false},
		{"/api/datasets/org/d/xet-write-token/main", hubWriter, 200, "", true},
		{"/api/spaces/org/s/xet-read-token/main", hubReader, 200, "", false},
		{"/api/models/org/m/xet-write-token/main", hubReader, 403, "", false},                      // a reader may not write main
		{"/api/models/org/m/xet-write-token/refs%2Fpr%2F1", hubReader, 200, "", true},              // but may write a PR ref
		{"/api/models/org/m/xet-write-token/None?create_pr=1", hubReader, 200, "", true},           // or open one
		{"/api/models/org/m/xet-write-token/refs/pr/1", hubWriter, 404, "RevisionNotFound", false}, // not encoded
		{"/api/models/org/m/xet-read-token/main", "hf_wrong", 401, "", false},
		{"/api/models/org/m/xet-read-token/main", "", 401, "", false},
		{"/api/models/pub/m/xet-read-token/main", "", 200, "", false}, // public: anonymous read
		{"/api/models/other/m/xet-read-token/main", hubReader, 404, "RepoNotFound", false},
	} {
		var hdr []string
		if tc.tok != "" {
			hdr = servertest.Bearer(tc.tok)
		}
		res := e.do("GET", tc.path, nil, hdr...)
		if res.status != tc.want {
			t.Errorf("%s with %q: %v, want %d", tc.path, tc.tok, res, tc.want)
			continue
		}
		if tc.want != 200 {
			if res.header.Get("X-Error-Message") == "" || !strings.Contains(string(res.body), `"error"`) || res.header.Get("X-Error-Code") != tc.code {
				t.Errorf("%s: error answer lacks the Hub's shape: %v %v", tc.path, res.header, res)
			}
			continue
		}
		tok := decodeJSON[casapi.Token](t, res.body)
		if tok.AccessToken == "" || tok.CasURL != e.base || res.header.Get(lfsbatch.HeaderAccessToken) != tok.AccessToken ||
			res.header.Get(lfsbatch.HeaderCasURL) != e.base || res.header.Get(lfsbatch.HeaderTokenExpiration) != strconv.FormatInt(tok.Exp, 10) {
			t.Errorf("%s: token body and X-Xet-* headers disagree: %s %v", tc.path, res.body, res.header)
		}
		c, err := e.srv.tokens.Verify(tok.AccessToken)
		if err != nil || (c.Scope == scopeWrite) != tc.write {
			t.Errorf("%s: token scope %q, %v", tc.path, c.Scope, err)
		}
	}
	// HTTP Basic with any user name and the token as password (what git credential helpers and
	// git-lfs-authenticate give) is accepted too.
	res := e.do("GET", "/api/models/org/m/xet-read-token/main", nil, servertest.Basic("anyone", hubReader)...)
	if res.status != 200 {
		t.Errorf("Basic: %v", res)
	}
}

// Upload batches answer xet, Hub style: href = the write-token route of the ref, the four X-Xet-*
// headers and nothing else, and no actions for stored objects. Download batches answer basic with
// bridge URLs whose GET streams the file (with Range) until the signature expires.
func TestHubBatchShapes(t *testing.T) {
	e := newHubEnv(t)
	r := loadRef(t)
	oid := hex.EncodeToString(r.sha[:])
	size := len(r.content)
	res := e.do("POST", "/org/m.git/info/lfs/objects/batch", hubBatch("upload", []string{"basic", "xet"}, "refs/heads/dev", oid, size), servertest.Bearer(hubWriter)...)
	ans := decodeJSON[lfsbatch.Response](t, res.body)
	if res.status != 200 || ans.Transfer != "xet" {
		t.Fatalf("upload batch: %v", res)
	}
	up := ans.Objects[0].Actions["upload"]
	if up.Href != e.base+"/api/models/org/m/xet-write-token/dev" || len(up.Header) != 4 || up.Header["Authorization"] != "" {
		t.Errorf("xet action %+v", up)
	}
	e.uploadRef(r, "Authorization", "Bearer "+up.Header[lfsbatch.HeaderAccessToken])
	res = e.do("POST", "/org/m.git/info/lfs/objects/batch", hubBatch("upload", []string{"xet"}, "", oid, size), servertest.Bearer(hubWriter)...)
	if a := decodeJSON[lfsbatch.Response](t, res.body); len(a.Objects[0].Actions) != 0 {
		t.Errorf("stored object got actions: %v", res)
	}

	res = e.do("POST", "/org/m.git/info/lfs/objects/batch", hubBatch("download", []string{"xet", "basic"}, "", oid, size), servertest.Bearer(hubReader)...)
	ans = decodeJSON[lfsbatch.Response](t, res.body)
	if ans.Transfer != "basic" {
		t.Fatalf("download batch answered %q", ans.Transfer)
	}
	href := ans.Objects[0].Actions["download"].Href
	u, _ := url.Parse(href)
	segs := strings.Split(u.Path, "/")
	if len(segs) != 4 || segs[1] != "xet-bridge-us" || len(segs[2]) != 24 || segs[3] != r.fileHash.String() || u.Query().Get("X-Amz-Expires") != "3600" {
		t.Fatalf("bridge URL %s", href)
	}
	got := e.do("GET", href, nil)
	if sum := sha256.Sum256(got.body); got.status != 200 || sum != r.sha {
		t.Errorf("bridge GET: %d, %d bytes", got.status, len(got.body))
	}
	part := e.do("GET", href, nil, "Range", "bytes=100-199")
	if part.status != 206 || string(part.body) != string(r.content[100:200]) {
		t.Errorf("bridge Range GET: %d %d bytes", part.status, len(part.body))
	}
	if res := e.do("GET", strings.Replace(href, "X-Amz-Signature=", "X-Amz-Signature=x", 1), nil); res.status != 403 {
		t.Errorf("tampered bridge URL: %v", res)
	}
	e.clock.Advance(bridgeTTL + time.Second)
	if res := e.do("GET", href, nil); res.status != 403 || !strings.Contains(string(res.body), "expired") {
		t.Errorf("expired bridge URL: %v", res)
	}
}

// Objects pushed with the basic transfer are kept whole and downloaded by a CDN-style URL.
func TestHubLegacyUploadAndCDN(t *testing.T) {
	e := newHubEnv(t)
	data := []byte("a legacy LFS object, kept whole")
	sum := sha256.Sum256(data)
	oid := hex.EncodeToString(sum[:])
	res := e.do("POST", "/datasets/org/d.git/info/lfs/objects/batch", hubBatch("upload", []string{"basic"}, "", oid, len(data)), servertest.Bearer(hubWriter)...)
	ans := decodeJSON[lfsbatch.Response](t, res.body)
	if ans.Transfer != "basic" {
		t.Fatalf("upload without xet: %v", res)
	}
	put := ans.Objects[0].Actions["upload"]
	if res := e.do("PUT", put.Href, []byte("not the object"), "Authorization", put.Header["Authorization"]); res.status != 400 {
		t.Errorf("PUT of other bytes: %v", res)
	}
	if res := e.do("PUT", put.Href, data, "Authorization", put.Header["Authorization"]); res.status != 200 {
		t.Fatalf("PUT: %v", res)
	}
	res = e.do("POST", "/datasets/org/d.git/info/lfs/objects/batch", hubBatch("download", []string{"basic"}, "", oid, len(data)), servertest.Bearer(hubReader)...)
	href := decodeJSON[lfsbatch.Response](t, res.body).Objects[0].Actions["download"].Href
	if !strings.Contains(href, "/cdn-lfs/") || strings.Contains(href, "xet-bridge") {
		t.Fatalf("legacy href %s", href)
	}
	if got := e.do("GET", href, nil); got.status != 200 || string(got.body) != string(data) {
		t.Errorf("CDN GET: %v", got)
	}
	if res := e.do("POST", "/v1/telemetry", []byte(`{"time":1,"event":"xet_upload_summary","session_id":"s","user_agent":"u","metrics":{}}`)); res.status != 200 {
		t.Errorf("telemetry: %v", res)
	}
}

func TestParseHubTokensRejects(t *testing.T) {
	for _, bad := range []string{"tok:name", "tok:name:admin", ":name:read", "tok::write"} {
		if _, err := ParseHubTokens(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// The Hub emulator's telemetry route takes anyone's request (xet-core sends telemetry without
// asking) and reads none of its body: an unauthenticated megabyte costs the server nothing but
// the answer (before, it read up to 1 MiB of it), and the connection closes after it.
func TestTelemetryReadsNothing(t *testing.T) {
	e := newHubEnv(t)
	body := &countingReader{r: bytes.NewReader(make([]byte, 1<<20))}
	req := httptest.NewRequest("POST", "/v1/telemetry", body)
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 || body.n != 0 || rec.Header().Get("Connection") != "close" {
		t.Fatalf("telemetry: %d, %d bytes of its body read, Connection %q; want 200, none read, close",
			rec.Code, body.n, rec.Header().Get("Connection"))
	}
}
