package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash/hashtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

func errorMessage(t *testing.T, r resp) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error body content type %q: %v", ct, r)
	}
	return decodeJSON[casapi.Error](t, r.body).Error
}

func TestXorbUploadRejectsBadInput(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	x := "/v1/xorbs/default/" + r.xorbHash.String()

	res := e.do("POST", "/v1/xorbs/default/not-a-hash", r.xorbBody)
	if res.status != 400 || !strings.Contains(errorMessage(t, res), "xorb hash") {
		t.Fatalf("bad hash: %v", res)
	}
	res = e.do("POST", "/v1/xorbs/elsewhere/"+r.xorbHash.String(), r.xorbBody)
	if res.status != 400 || !strings.Contains(errorMessage(t, res), "prefix") {
		t.Fatalf("bad prefix: %v", res)
	}
	// Body that does not hash to the xorb hash in the URL.
	other := r.fileHash.String()
	res = e.do("POST", "/v1/xorbs/default/"+other, r.xorbBody)
	if res.status != 400 || errorMessage(t, res) == "" {
		t.Fatalf("hash mismatch: %v", res)
	}
	// Truncated body (a record cut in half).
	res = e.do("POST", x, r.xorbBody[:len(r.xorbBody)-100])
	if res.status != 400 || errorMessage(t, res) == "" {
		t.Fatalf("truncated xorb: %v", res)
	}
	// Garbage.
	res = e.do("POST", x, []byte("this is not a xorb at all"))
	if res.status != 400 {
		t.Fatalf("garbage xorb: %v", res)
	}
	// Nothing of the above was stored.
	if res := e.do("HEAD", x, nil); res.status != 404 {
		t.Fatalf("HEAD after rejected uploads: %v", res)
	}
	if res := e.do("HEAD", "/v1/xorbs/default/"+other, nil); res.status != 404 {
		t.Fatalf("HEAD of mismatched hash: %v", res)
	}
}

func TestXorbUploadBodyLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Limits.Xorb = 1000 })
	r := loadRef(t)
	res := e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody)
	if res.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("over-limit xorb: %v", res)
	}
	// Chunked (no Content-Length): the limit still holds while reading.
	req, _ := http.NewRequest("POST", e.base+"/v1/xorbs/default/"+r.xorbHash.String(), struct{ *bytes.Reader }{bytes.NewReader(r.xorbBody)})
	hres, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hres.Body.Close()
	if hres.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked over-limit xorb: %d", hres.StatusCode)
	}
}

func TestShardUploadRejectsBadInput(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)

	// Missing xorb: the shard names a xorb that was never uploaded.
	res := e.do("POST", "/v1/shards", r.shard)
	if res.status != 400 || errorMessage(t, res) == "" {
		t.Fatalf("shard before its xorb: %v", res)
	}
	if res := e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody); res.status != 200 {
		t.Fatal(res)
	}
	// Wrong verification hash.
	sh, err := shard.Parse(r.shard)
	if err != nil {
		t.Fatal(err)
	}
	sh.Files[0].Verification[0][0] ^= 1
	res = e.do("POST", "/v1/shards", sh.AppendUpload(nil))
	if res.status != 400 || !strings.Contains(errorMessage(t, res), "verification") {
		t.Fatalf("wrong verification: %v", res)
	}
	// Not a shard; empty.
	if res := e.do("POST", "/v1/shards", []byte("nonsense")); res.status != 400 {
		t.Fatalf("garbage shard: %v", res)
	}
	if res := e.do("POST", "/v1/shards", []byte{}); res.status != 400 {
		t.Fatalf("empty shard: %v", res)
	}
	// Nothing was registered.
	if res := e.do("HEAD", "/v1/files/"+r.fileHash.String(), nil); res.status != 404 {
		t.Fatalf("file registered by a rejected shard: %v", res)
	}
	// v2 reports the same failure as an error frame, not retryable.
	frames := shardV2(t, e, sh.AppendUpload(nil))
	last := frames[len(frames)-1]
	if last.Type != "error" || last.Retryable || !strings.Contains(last.Message, "verification") {
		t.Fatalf("v2 wrong verification frames: %+v", frames)
	}
	// Over the body limit: 413 before any frame.
	e2 := newEnv(t, func(c *Config) { c.Limits.Shard = 100 })
	if res := e2.do("POST", "/v2/shards", r.shard); res.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("v2 over-limit shard: %v", res)
	}
}

func shardV2(t *testing.T, e *env, body []byte, hdr ...string) []casapi.ShardFrame {
	t.Helper()
	res := e.do("POST", "/v2/shards", body, hdr...)
	if res.status != 200 || res.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("v2 shards: %v %v", res, res.header)
	}
	var frames []casapi.ShardFrame
	sc := bufio.NewScanner(bytes.NewReader(res.body))
	for sc.Scan() {
		var f casapi.ShardFrame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("frame %q: %v", sc.Text(), err)
		}
		frames = append(frames, f)
	}
	if len(frames) == 0 {
		t.Fatal("no frames")
	}
	return frames
}

func TestShardUploadV2Frames(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	if res := e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody); res.status != 200 {
		t.Fatal(res)
	}
	for i, want := range []int{casapi.ShardSyncPerformed, casapi.ShardExists} {
		frames := shardV2(t, e, r.shard)
		var types []string
		for _, f := range frames {
			types = append(types, f.Type)
		}
		if got := strings.Join(types, ","); got != "validating,validating,committing,result" {
			t.Fatalf("upload %d frame types %s", i, got)
		}
		if res := frames[len(frames)-1].Result; res == nil || *res != want {
			t.Fatalf("upload %d result %v, want %d", i, res, want)
		}
	}
	if res := e.do("HEAD", "/v1/files/"+r.fileHash.String(), nil); res.status != 200 || res.header.Get("Content-Length") != "810234" {
		t.Fatalf("HEAD file after v2 upload: %v", res)
	}
}

func TestChunkQuery(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	e.uploadRef(r)
	first := loadRefChunk0(t)
	for _, prefix := range []string{"default", "default-merkledb"} {
		res := e.do("GET", "/v1/chunks/"+prefix+"/"+first.String(), nil)
		if res.status != 200 || res.header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("%s: %v", prefix, res.status)
		}
		sh, err := shard.Parse(res.body)
		if err != nil || !sh.Keyed() || len(sh.Xorbs) != 1 || sh.Xorbs[0].Hash != r.xorbHash {
			t.Fatalf("%s: dedupe shard %v %+v", prefix, err, sh)
		}
		keyed := hash.Keyed(sh.Footer.HMACKey, first)
		if sh.Xorbs[0].Chunks[0].Hash != keyed {
			t.Fatalf("%s: first chunk is not keyed with the footer key", prefix)
		}
	}
	if res := e.do("GET", "/v1/chunks/default/"+r.fileHash.String(), nil); res.status != 404 {
		t.Fatalf("unknown chunk: %v", res)
	}
	if res := e.do("GET", "/v1/chunks/other/"+first.String(), nil); res.status != 400 {
		t.Fatalf("bad prefix: %v", res)
	}
	if res := e.do("GET", "/v1/chunks/default/zz", nil); res.status != 400 {
		t.Fatalf("bad chunk hash: %v", res)
	}
}

func loadRefChunk0(t *testing.T) hash.Hash {
	t.Helper()
	return hashtest.MustParse(vectors.ReferenceChunks(t)[0].Hash)
}

func TestReconstructionErrors(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	e.uploadRef(r)
	for _, v := range []string{"v1", "v2"} {
		p := "/" + v + "/reconstructions/"
		if res := e.do("GET", p+"xyz", nil); res.status != 400 {
			t.Fatalf("%s bad hash: %v", v, res)
		}
		if res := e.do("GET", p+r.xorbHash.String(), nil); res.status != 404 {
			t.Fatalf("%s unknown file: %v", v, res)
		}
		if res := e.do("GET", p+r.xorbHash.String(), nil, "Range", "bytes=0-10"); res.status != 404 {
			t.Fatalf("%s unknown file with range: %v", v, res)
		}
		if res := e.do("GET", p+r.fileHash.String(), nil, "Range", "lines=0-10"); res.status != 400 {
			t.Fatalf("%s non-bytes range: %v", v, res)
		}
		if res := e.do("GET", p+r.fileHash.String(), nil, "Range", "bytes=10-5"); res.status != 400 {
			t.Fatalf("%s reversed range: %v", v, res)
		}
		if res := e.do("GET", p+r.fileHash.String(), nil, "Range", "bytes=0-1,5-6"); res.status != 400 {
			t.Fatalf("%s multi range: %v", v, res)
		}
		if res := e.do("GET", p+r.fileHash.String(), nil, "Range", "bytes=9999999-"); res.status != 416 {
			t.Fatalf("%s past end: %v", v, res)
		}
	}
	if res := e.do("HEAD", "/v1/files/nothex", nil); res.status != 400 {
		t.Fatalf("HEAD bad file hash: %v", res)
	}
}

func TestTokenChecks(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Users = testerUsers(t) })
	r := loadRef(t)
	x := "/v1/xorbs/default/" + r.xorbHash.String()
	read := e.token("tester", "team/a", ScopeRead, time.Minute)
	write := e.token("tester", "team/a", ScopeWrite, time.Minute)
	expiring := e.token("tester", "team/a", ScopeWrite, time.Second)

	// Missing: 401 with a Bearer challenge.
	res := e.do("POST", x, r.xorbBody)
	if res.status != 401 || !strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("no token: %v %v", res, res.header)
	}
	for _, bad := range []string{"garbage", "xet1.e30.AAAA", write[:len(write)-2] + "xx", strings.Replace(write, "xet1.", "xet1.X", 1)} {
		if res := e.do("GET", "/v2/reconstructions/"+r.fileHash.String(), nil, servertest.Bearer(bad)...); res.status != 401 {
			t.Fatalf("bad token %q: %v", bad, res)
		}
	}
	// Wrong scope: a read token cannot upload (403), but can read.
	res = e.do("POST", x, r.xorbBody, servertest.Bearer(read)...)
	if res.status != 403 || !strings.Contains(errorMessage(t, res), "scope") {
		t.Fatalf("read token uploading: %v", res)
	}
	if res := e.do("POST", "/v1/shards", r.shard, servertest.Bearer(read)...); res.status != 403 {
		t.Fatalf("read token uploading a shard: %v", res)
	}
	if res := e.do("HEAD", x, nil, servertest.Bearer(read)...); res.status != 404 {
		t.Fatalf("read token HEAD: %v", res)
	}
	// Expired: 401 invalid_token.
	e.clock.Advance(2 * time.Second)
	res = e.do("POST", x, r.xorbBody, servertest.Bearer(expiring)...)
	if res.status != 401 || !strings.Contains(res.header.Get("WWW-Authenticate"), "invalid_token") || !strings.Contains(errorMessage(t, res), "expired") {
		t.Fatalf("expired token: %v %v", res, res.header)
	}
	// The write token still works and its namespace registers the shard.
	e.uploadRef(r, servertest.Bearer(write)...)
	if _, _, err := e.st.LookupSHA256(t.Context(), "team/a", hashOfSHA(r.sha)); err != nil {
		t.Fatalf("shard not registered under the token's namespace: %v", err)
	}
	if _, _, err := e.st.LookupSHA256(t.Context(), "team/b", hashOfSHA(r.sha)); err == nil {
		t.Fatal("shard registered under another namespace")
	}
	// Tokens never reach the logs.
	if logs := e.logs.String(); strings.Contains(logs, write[10:30]) || strings.Contains(logs, "Bearer") {
		t.Fatalf("token in logs: %s", logs)
	}
}

// Open mode: CAS routes work without tokens; a presented token must still be valid.
func TestOpenModeAllowsWithoutToken(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	e.uploadRef(r)
	if res := e.do("GET", "/v2/reconstructions/"+r.fileHash.String(), nil); res.status != 200 {
		t.Fatalf("open read: %v", res)
	}
	if res := e.do("GET", "/v2/reconstructions/"+r.fileHash.String(), nil, servertest.Bearer("forged")...); res.status != 401 {
		t.Fatalf("open mode with a forged token: %v", res)
	}
}
