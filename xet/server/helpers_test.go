package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash/hashtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// clock is a settable time source shared by the server under test.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}
func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// env is a server over a real store in a temp dir, listening on 127.0.0.1.
type env struct {
	t     testing.TB
	st    *store.Store
	srv   *Server
	hs    *httptest.Server
	clock *clock
	base  string
	logs  *lockedWriter
}

var testSecret = []byte("0123456789abcdef0123456789abcdef-test-secret")

func newEnv(t testing.TB, mod func(*Config)) *env {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	logs := &lockedWriter{w: &bytes.Buffer{}}
	cfg := Config{
		Store:  st,
		Ingest: &UploadIngester{Store: st, Policy: xorb.PolicyAuto},
		Secret: testSecret,
		Now:    c.Now,
		Log:    zerolog.New(logs),
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &env{t: t, st: st, srv: srv, hs: hs, clock: c, base: hs.URL, logs: logs}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// do sends a request to the env's server; hdr holds header name/value pairs.
func (e *env) do(method, path string, body []byte, hdr ...string) resp {
	e.t.Helper()
	url := path
	if !strings.HasPrefix(path, "http") {
		url = e.base + path
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp{res.StatusCode, res.Header, b}
}

// token issues a token of user ("": none) for ns and scope, living ttl. A user the users table
// lists gets the mark of their password in it, as the server mints it (a token of no listed user
// opens nothing on a server with users).
func (e *env) token(user, ns string, scope Scope, ttl time.Duration) string {
	e.t.Helper()
	c := Claims{Namespace: ns, Scope: scope, Exp: e.clock.Now().Add(ttl).Unix(), Subject: user}
	if users := e.srv.userTable(); users != nil && user != "" {
		if u := users.Lookup(user); u != nil {
			c.Cred = e.srv.tokens.userMark(u)
		}
	}
	tok, err := e.srv.tokens.Issue(c)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

func decodeJSON[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// refData is the reference material: the first 10 chunk records of the EV-population xorb, which
// decode to the first 810,234 bytes of the CSV, and an upload-form shard registering that prefix as a
// file.
type refData struct {
	xorbBody []byte
	xorbHash hash.Hash
	content  []byte
	fileHash hash.Hash
	sha      [32]byte
	shard    []byte
}

func loadRef(t testing.TB) refData {
	t.Helper()
	var r refData
	r.xorbBody = vectors.ReadFile(t, "ev-population.xorb.first-10-chunks")
	if err := testutil.DecodeRecords(r.xorbBody, func(_ int, raw []byte) error {
		r.content = append(r.content, raw...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(r.content) != 810234 {
		t.Fatalf("reference prefix decodes to %d bytes", len(r.content))
	}
	lines := vectors.ReferenceChunks(t)[:10]
	entries := make([]hash.Entry, len(lines))
	chunkHashes := make([]hash.Hash, len(lines))
	sx := shard.Xorb{Chunks: make([]shard.XorbChunk, len(lines))}
	var raw uint64
	for i, l := range lines {
		h := hashtest.MustParse(l.Hash)
		entries[i] = hash.Entry{Hash: h, Size: l.Size}
		chunkHashes[i] = h
		sx.Chunks[i] = shard.XorbChunk{Hash: h, RawStart: uint32(raw), RawLen: uint32(l.Size)}
		raw += l.Size
	}
	r.xorbHash = hash.Merkle(entries)
	r.fileHash = hash.File(entries)
	r.sha = sha256.Sum256(r.content)
	sx.Hash, sx.BytesInXorb = r.xorbHash, uint32(raw)
	f := testutil.NewFile(r.fileHash, []shard.Term{{Xorb: r.xorbHash, UnpackedBytes: uint32(raw), ChunkStart: 0, ChunkEnd: 10}}, chunkHashes, r.sha)
	sh := &shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}, Xorbs: []shard.Xorb{sx}}
	r.shard = sh.AppendUpload(nil)
	return r
}

// uploadRef stores the reference xorb and shard through HTTP (open mode or with a write token).
func (e *env) uploadRef(r refData, hdr ...string) {
	e.t.Helper()
	res := e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody, hdr...)
	if res.status != 200 {
		e.t.Fatalf("xorb upload: %v", res)
	}
	res = e.do("POST", "/v1/shards", r.shard, hdr...)
	if res.status != 200 {
		e.t.Fatalf("shard upload: %v", res)
	}
}

// fetchPlan downloads what a v2 plan describes through its signed URLs (one GET per range, with
// the Range header the URL was signed for) and assembles the file bytes: terms decoded, the first
// OffsetIntoFirstRange bytes dropped, at most limit bytes kept.
func (e *env) fetchPlan(p *casapi.ReconstructionV2, limit uint64) []byte {
	e.t.Helper()
	var out []byte
	for ti, term := range p.Terms {
		var found bool
		for _, f := range p.Xorbs[term.Hash] {
			for _, xr := range f.Ranges {
				if xr.Chunks.Start > term.Range.Start || term.Range.End > xr.Chunks.End {
					continue
				}
				res := e.do("GET", f.URL, nil, "Range", xr.Bytes.Header())
				if res.status != http.StatusPartialContent || uint64(len(res.body)) != xr.Bytes.Len() {
					e.t.Fatalf("term %d: GET %s: %d, %d bytes (want %d)", ti, xr.Bytes.Header(), res.status, len(res.body), xr.Bytes.Len())
				}
				var got []byte
				err := testutil.DecodeRecords(res.body, func(i int, raw []byte) error {
					c := xr.Chunks.Start + uint32(i)
					if c >= term.Range.Start && c < term.Range.End {
						got = append(got, raw...)
					}
					return nil
				})
				if err != nil {
					e.t.Fatalf("term %d: decoding fetched records: %v", ti, err)
				}
				if len(got) != int(term.UnpackedLength) {
					e.t.Fatalf("term %d: %d bytes, plan says %d", ti, len(got), term.UnpackedLength)
				}
				out = append(out, got...)
				found = true
				break
			}
			if found {
				break
			}
		}
		if !found {
			e.t.Fatalf("term %d: no fetch range covers chunks %+v", ti, term.Range)
		}
	}
	if p.OffsetIntoFirstRange > uint64(len(out)) {
		e.t.Fatalf("offset %d past the %d fetched bytes", p.OffsetIntoFirstRange, len(out))
	}
	out = out[p.OffsetIntoFirstRange:]
	if uint64(len(out)) > limit {
		out = out[:limit]
	}
	return out
}

// testerUsers is a users table of one user, "tester", with write access everywhere: the user of
// env.token's tokens.
func testerUsers(t testing.TB) *Users {
	return mustUsers(t, servertest.UserLine("tester", "tester-password-0", ""))
}

func mustUsers(t testing.TB, text string) *Users {
	t.Helper()
	p := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := LoadUsers(p)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func hashOfSHA(d [32]byte) hash.Hash { return hash.FromSHA256(d) }

func multipartReader(res *http.Response) (*multipart.Reader, error) {
	mt, params, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if mt != "multipart/byteranges" {
		return nil, fmt.Errorf("content type %q, want multipart/byteranges", mt)
	}
	return multipart.NewReader(res.Body, params["boundary"]), nil
}

func readAll(t testing.TB, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeJSONReader(res *http.Response, v any) error {
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return json.NewDecoder(res.Body).Decode(v)
}
