package test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/s3test"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// The isolation attack of issue 41 against a real xet-server process over HTTP, on the filesystem
// and on S3 (versitygw): Bob, who may write to org/b and may not read org/a, tries to read the
// private files Alice pushed to org/a beside a LICENSE he also has. The whole chain and each of its
// steps are checked: none may give Bob a byte or a chunk hash of Alice's private data.
func TestAttackIsolationFS(t *testing.T) {
	buildServer(t)
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--users", attackUsers(t))
	attackIsolation(t, "http://"+s.addr)
}

func TestAttackIsolationS3(t *testing.T) {
	buildServer(t)
	s3 := s3test.Start(t)
	serverEnv = s3.Env()
	t.Cleanup(func() { serverEnv = nil })
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--users", attackUsers(t), "--storage", s3.URL("cas"))
	attackIsolation(t, "http://"+s.addr)
}

const attackPassword = "correct-horse-battery-staple"

// uploadToken is the CAS token of a xet upload action of repo's batch API, for user.
func uploadToken(t *testing.T, base, repo, user string) string {
	lfs := strings.Replace(base, "://", "://"+user+":"+attackPassword+"@", 1) + "/" + repo + ".git/info/lfs"
	return servertest.CASToken(servertest.XetAction(t, lfs, "upload", lfsbatch.Object{OID: strings.Repeat("ab", 32), Size: 1}))
}

// attackUsers writes the users file: alice writes org/a, bob writes org/b, and neither reaches the
// other's repository.
func attackUsers(t *testing.T) string {
	t.Helper()
	salt := []byte("0123456789abcdef")
	d := sha256.Sum256(append(append([]byte{}, salt...), attackPassword...))
	line := func(name, repo string) string {
		return name + ":$sha256$" + hex.EncodeToString(salt) + "$" + hex.EncodeToString(d[:]) + ":write:" + repo + "\n"
	}
	p := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(p, []byte(line("alice", "org/a")+line("bob", "org/b,org/c")), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// alicePush is what Alice stores in org/a: one xorb holding LICENSE (chunk 0) and her private
// chunks, and the two files over it, as a client that packs a push's small files into shared
// xorbs (xet-core, huggingface.js) uploads them.
type alicePush struct {
	license, private []byte
	xorb             hash.Hash
	licenseFile      hash.Hash
	privateFile      hash.Hash
	privateHashes    []hash.Hash
}

func pushAlice(t *testing.T, c *casSession) *alicePush {
	t.Helper()
	p := &alicePush{license: []byte(strings.Repeat("Permission is hereby granted, free of charge. ", 40))}
	chunks := [][]byte{p.license}
	for i := range 6 {
		chunks = append(chunks, testutil.RandomBytes(12000+i*777, uint64(4100+i)))
	}
	var body []byte
	var entries []hash.Entry
	var xc []shard.XorbChunk
	var raw uint32
	for _, ch := range chunks {
		h := hash.Chunk(ch)
		body = testutil.AppendRecord(body, ch, xorb.SchemeLZ4)
		entries = append(entries, hash.Entry{Hash: h, Size: uint64(len(ch))})
		xc = append(xc, shard.XorbChunk{Hash: h, RawStart: raw, RawLen: uint32(len(ch))})
		raw += uint32(len(ch))
	}
	p.xorb = hash.Merkle(entries)
	for _, ch := range chunks[1:] {
		p.private = append(p.private, ch...)
	}
	for _, e := range entries[1:] {
		p.privateHashes = append(p.privateHashes, e.Hash)
	}
	p.licenseFile, p.privateFile = hash.File(entries[:1]), hash.File(entries[1:])
	lic := testutil.NewFile(p.licenseFile, []shard.Term{{Xorb: p.xorb, UnpackedBytes: uint32(len(p.license)), ChunkStart: 0, ChunkEnd: 1}},
		[]hash.Hash{entries[0].Hash}, sha256.Sum256(p.license))
	priv := testutil.NewFile(p.privateFile, []shard.Term{{Xorb: p.xorb, UnpackedBytes: uint32(len(p.private)), ChunkStart: 1, ChunkEnd: uint32(len(chunks))}},
		p.privateHashes, sha256.Sum256(p.private))
	sh := &shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{lic, priv},
		Xorbs: []shard.Xorb{{Hash: p.xorb, BytesInXorb: raw, Chunks: xc}}}
	if res := c.do("POST", "/v1/xorbs/default/"+p.xorb.String(), body); res.status != 200 {
		t.Fatalf("alice's xorb: %v", res)
	}
	if res := c.do("POST", "/v1/shards", sh.AppendUpload(nil)); res.status != 200 {
		t.Fatalf("alice's shard: %v", res)
	}
	return p
}

func attackIsolation(t *testing.T, base string) {
	alice := &casSession{t: t, base: base, tok: uploadToken(t, base, "org/a", "alice")}
	a := pushAlice(t, alice)
	bob := &casSession{t: t, base: base, tok: uploadToken(t, base, "org/b", "bob")}
	secret := func(b []byte) bool { return len(b) > 0 && bytes.Contains(b, a.private[:4096]) }
	leaks := func(b []byte) bool {
		for _, h := range a.privateHashes {
			if bytes.Contains(b, h[:]) || bytes.Contains(b, []byte(h.String())) {
				return true
			}
		}
		return false
	}

	t.Run("chain", func(t *testing.T) {
		bob.t = t
		if got := bobChain(bob, a.license); secret(got) {
			t.Errorf("bob read %d bytes of alice's private files through the attack chain", len(got))
		}
	})
	t.Run("footer through a signed URL", func(t *testing.T) {
		bob.t = t
		_, plan := bobLicense(bob, a.license)
		if plan == nil {
			return
		}
		for x, fetches := range plan.Xorbs {
			for _, f := range fetches {
				res := getURL(t, f.URL, "bytes=-65536")
				if leaks(res.body) {
					t.Errorf("the suffix range of a signed URL of xorb %s gave chunk hashes outside its ranges (%d)", x, res.status)
				}
				// The whole object through the URL: never bytes outside the signed ranges.
				res = getURL(t, f.URL, "bytes=0-")
				if secret(res.body) || leaks(res.body) {
					t.Errorf("a signed URL of xorb %s served bytes outside its ranges (%d, %d bytes)", x, res.status, len(res.body))
				}
			}
		}
	})
	t.Run("shard names another repository's xorb", func(t *testing.T) {
		// Bob knows every chunk hash (as if leaked) but was never shown the xorb: registering
		// a file over it must fail, and so must reading it.
		carol := &casSession{t: t, base: base, tok: uploadToken(t, base, "org/c", "bob")}
		f := testutil.NewFile(a.privateFile, []shard.Term{{Xorb: a.xorb, UnpackedBytes: uint32(len(a.private)), ChunkStart: 1, ChunkEnd: uint32(1 + len(a.privateHashes))}},
			a.privateHashes, sha256.Sum256(a.private))
		sh := &shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}}
		if res := carol.do("POST", "/v1/shards", sh.AppendUpload(nil)); res.status == 200 {
			t.Errorf("a shard naming chunks of a xorb org/c never uploaded nor was shown registered: %v", res)
		}
		if got := carol.download(a.privateFile); secret(got) {
			t.Error("bob downloaded alice's private file through org/c")
		}
	})
	t.Run("wrong SHA-256 echoes the real one", func(t *testing.T) {
		d := sha256.Sum256(a.license)
		lic := testutil.NewFile(a.licenseFile, []shard.Term{{Xorb: a.xorb, UnpackedBytes: uint32(len(a.license)), ChunkStart: 0, ChunkEnd: 1}},
			[]hash.Hash{hash.Chunk(a.license)}, [32]byte{})
		sh := &shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{lic}}
		res := alice.do("POST", "/v1/shards", sh.AppendUpload(nil))
		if res.status == 200 || bytes.Contains(res.body, []byte(hex.EncodeToString(d[:]))) {
			t.Errorf("a wrong SHA-256: %v", res)
		}
	})
	t.Run("reconstruction and size of a file of another repository", func(t *testing.T) {
		bob.t = t
		for _, v := range []string{"v1", "v2"} {
			if res := bob.do("GET", "/"+v+"/reconstructions/"+a.privateFile.String(), nil); res.status != 404 || leaks(res.body) {
				t.Errorf("%s reconstruction of org/a's file with org/b's token: %d", v, res.status)
			}
		}
		if res := bob.do("HEAD", "/v1/files/"+a.privateFile.String(), nil); res.status != 404 {
			t.Errorf("HEAD of org/a's file with org/b's token: %d (Content-Length %s)", res.status, res.header.Get("Content-Length"))
		}
		// org/b was shown the xorb (bob's dedupe query): HEAD says it may reference it. org/c
		// was never shown it: for it the xorb is not there.
		carol := &casSession{t: t, base: base, tok: uploadToken(t, base, "org/c", "bob")}
		if res := carol.do("HEAD", "/v1/xorbs/default/"+a.xorb.String(), nil); res.status != 404 {
			t.Errorf("HEAD of org/a's xorb with org/c's token: %d", res.status)
		}
	})
	// Alice still reads her own files whole.
	if got := alice.download(a.privateFile); !bytes.Equal(got, a.private) {
		t.Errorf("alice downloads %d bytes of her private file, want %d", len(got), len(a.private))
	}
}

// bobLicense registers in org/b a file of the one LICENSE chunk, found through the global-dedupe
// query, and returns the index of that chunk in its xorb and the file's plan (nil when a step was
// refused). Every step here is a legitimate client's: a push of a LICENSE that deduplicates.
func bobLicense(c *casSession, license []byte) (*shard.Shard, *casapi.ReconstructionV2) {
	t := c.t
	c0 := hash.Chunk(license)
	res := c.do("GET", "/v1/chunks/default/"+c0.String(), nil)
	if res.status != 200 {
		t.Logf("dedupe query: %d", res.status)
		return nil, nil
	}
	keyed, err := shard.Parse(res.body)
	if err != nil || len(keyed.Xorbs) != 1 {
		t.Fatalf("dedupe answer: %v", err)
	}
	x := keyed.Xorbs[0]
	idx := -1
	for i, ch := range x.Chunks {
		if ch.Hash == hash.Keyed(keyed.Footer.HMACKey, c0) {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatal("the LICENSE chunk is not in the dedupe answer")
	}
	entries := []hash.Entry{{Hash: c0, Size: uint64(len(license))}}
	f := testutil.NewFile(hash.File(entries), []shard.Term{{Xorb: x.Hash, UnpackedBytes: uint32(len(license)), ChunkStart: uint32(idx), ChunkEnd: uint32(idx + 1)}},
		[]hash.Hash{c0}, sha256.Sum256(license))
	sh := &shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}}
	if res := c.do("POST", "/v1/shards", sh.AppendUpload(nil)); res.status != 200 {
		t.Fatalf("registering the LICENSE deduplicated against the xorb it was shown: %v", res)
	}
	res = c.do("GET", "/v2/reconstructions/"+f.Hash.String(), nil)
	if res.status != 200 {
		t.Fatalf("reconstructing bob's LICENSE: %v", res)
	}
	var plan casapi.ReconstructionV2
	if err := json.Unmarshal(res.body, &plan); err != nil {
		t.Fatal(err)
	}
	return keyed, &plan
}

// bobChain runs the whole attack and returns what bob read of the xorb's chunks beyond his own.
func bobChain(c *casSession, license []byte) []byte {
	t := c.t
	keyed, plan := bobLicense(c, license)
	if plan == nil {
		return nil
	}
	x := keyed.Xorbs[0]
	fetches := plan.Xorbs[x.Hash]
	if len(fetches) == 0 {
		t.Fatal("no fetch of the LICENSE's xorb")
	}
	res := getURL(t, fetches[0].URL, "bytes=-65536")
	foot, err := footerOf(res)
	if err != nil {
		t.Logf("footer: %v", err)
		return nil
	}
	// A file over the whole xorb with a zero SHA-256, then with the one the 400 names.
	entries := make([]hash.Entry, len(x.Chunks))
	for i, ch := range x.Chunks {
		entries[i] = hash.Entry{Hash: foot.ChunkHashes[i], Size: uint64(ch.RawLen)}
	}
	whole := hash.File(entries)
	register := func(sha [32]byte) resp {
		f, err := testutil.FileBlock(whole, []shard.Term{{Xorb: x.Hash, UnpackedBytes: x.BytesInXorb, ChunkStart: 0, ChunkEnd: uint32(len(x.Chunks))}},
			foot.ChunkHashes, sha)
		if err != nil {
			t.Fatal(err)
		}
		return c.do("POST", "/v1/shards", (&shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}}).AppendUpload(nil))
	}
	res = register([32]byte{})
	m := regexp.MustCompile(`content has SHA-256 ([0-9a-f]{64})`).FindSubmatch(res.body)
	if res.status != 400 || m == nil {
		t.Logf("registration with a zero SHA-256: %v", res)
		return nil
	}
	var real [32]byte
	hex.Decode(real[:], m[1])
	if res = register(real); res.status != 200 {
		t.Logf("registration with the echoed SHA-256: %v", res)
		return nil
	}
	return c.download(whole)
}

func footerOf(res resp) (*xorb.Footer, error) {
	if res.status != http.StatusPartialContent {
		return nil, fmt.Errorf("suffix range: %d", res.status)
	}
	var start, end, total int64
	if _, err := fmt.Sscanf(res.header.Get("Content-Range"), "bytes %d-%d/%d", &start, &end, &total); err != nil {
		return nil, err
	}
	f, _, err := xorb.ReadFooter(tailReader{base: start, b: res.body}, total)
	return f, err
}

type tailReader struct {
	base int64
	b    []byte
}

func (r tailReader) ReadAt(p []byte, off int64) (int, error) {
	if off < r.base || off-r.base+int64(len(p)) > int64(len(r.b)) {
		return 0, io.ErrUnexpectedEOF
	}
	return copy(p, r.b[off-r.base:]), nil
}

// casSession is raw CAS API calls with one bearer token.
type casSession struct {
	t         *testing.T
	base, tok string
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

func (c *casSession) do(method, path string, body []byte) resp {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.tok)
	return send(c.t, req)
}

func getURL(t *testing.T, url, rng string) resp {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", rng)
	return send(t, req)
}

func send(t *testing.T, req *http.Request) resp {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	return resp{res.StatusCode, res.Header, b}
}

// download reconstructs file with the session's token and fetches every range of its plan, as a
// client would; nil when a step is refused.
func (c *casSession) download(file hash.Hash) []byte {
	res := c.do("GET", "/v2/reconstructions/"+file.String(), nil)
	if res.status != 200 {
		return nil
	}
	var plan casapi.ReconstructionV2
	if err := json.Unmarshal(res.body, &plan); err != nil {
		c.t.Fatal(err)
	}
	var out []byte
	for _, term := range plan.Terms {
		got := c.fetchTerm(plan.Xorbs[term.Hash], term)
		if got == nil {
			return nil
		}
		out = append(out, got...)
	}
	return out[plan.OffsetIntoFirstRange:]
}

func (c *casSession) fetchTerm(fetches []casapi.XorbFetch, term casapi.Term) []byte {
	for _, f := range fetches {
		for _, xr := range f.Ranges {
			if xr.Chunks.Start > term.Range.Start || term.Range.End > xr.Chunks.End {
				continue
			}
			res := getURL(c.t, f.URL, xr.Bytes.Header())
			if res.status != http.StatusPartialContent {
				return nil
			}
			var got []byte
			_ = testutil.DecodeRecords(res.body, func(i int, raw []byte) error {
				if ch := xr.Chunks.Start + uint32(i); ch >= term.Range.Start && ch < term.Range.End {
					got = append(got, raw...)
				}
				return nil
			})
			return got
		}
	}
	return nil
}
