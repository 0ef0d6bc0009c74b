package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/fs"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// amplifyingShard is item 5's shard: one file naming every chunk of x, times times over, with a
// SHA-256 its content does not have.
func amplifyingShard(x *xorb.Xorb, times int) []byte {
	f := testutil.RepeatingFile(x, times, [32]byte{1})
	return (&shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}}).AppendUpload(nil)
}

// A shard of ~100 KB naming one 64 MiB-raw xorb of zeros 2048 times (128 GiB of content, with a
// wrong SHA-256) does not make the server read and hash what it names: on main it hashed for
// minutes (and registered nothing, so it could be sent again). Now its check costs what the
// registration's budget allows (store/budget.go), and the file, over budget, is registered
// unverified: never "already stored".
func TestAmplifyingShardIsCheap(t *testing.T) {
	e := newEnv(t, nil)
	tok := e.token("", "org/a", scopeWrite, time.Hour)
	x := testutil.ZerosXorb(512)
	if res := e.do("POST", "/v1/xorbs/default/"+x.Hash.String(), x.Body, servertest.Bearer(tok)...); res.status != 200 {
		t.Fatalf("xorb: %v", res)
	}
	body := amplifyingShard(x, 2048)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.base+"/v1/shards", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a %d-byte shard naming 128 GiB: no answer after %v: %v", len(body), time.Since(start).Round(time.Second), err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	t.Logf("%d-byte shard: %d in %v", len(body), res.StatusCode, time.Since(start).Round(time.Millisecond))
	if res.StatusCode != 200 {
		t.Fatalf("shard: %d %s", res.StatusCode, b)
	}
	if _, _, err := e.st.LookupVerifiedSHA256(context.Background(), "org/a", hash.FromSHA256([32]byte{1})); err == nil {
		t.Fatal("a file whose content was not hashed is mapped as verified")
	}
}

// A shard upload announcing 60 MiB and sending a few bytes costs what it sent, not what it
// announced.
func TestShardBodyNotSizedByContentLength(t *testing.T) {
	e := newEnv(t, nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 4 {
		r, _ := http.NewRequest("POST", "/v1/shards", io.LimitReader(bytes.NewReader(make([]byte, 100)), 100))
		r.ContentLength = 60 << 20
		rec := &discardWriter{h: http.Header{}}
		e.srv.readShard(rec, r)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Fatalf("4 shard bodies of 100 bytes announced as 60 MiB allocated %d MiB", n>>20)
	}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }

// heldBackend holds every registration's batch write until released (a receive from release
// each), counting those held at once and noting their namespaces in the order they came.
type heldBackend struct {
	blob.Backend
	held, most atomic.Int32
	release    chan struct{}
	mu         sync.Mutex
	came       []string // the ns/ directory of each registration held
}

func (h *heldBackend) CreateBatch(ctx context.Context, blobs []blob.NewBlob) ([]bool, error) {
	if !slices.ContainsFunc(blobs, func(b blob.NewBlob) bool { return strings.HasPrefix(b.Name, "files/") }) {
		return h.Backend.CreateBatch(ctx, blobs) // not a registration
	}
	if n := h.held.Add(1); n > h.most.Load() {
		h.most.Store(n)
	}
	defer h.held.Add(-1)
	for _, b := range blobs {
		if dir, ok := strings.CutPrefix(b.Name, "ns/"); ok {
			h.mu.Lock()
			h.came = append(h.came, strings.Split(dir, "/")[0])
			h.mu.Unlock()
			break
		}
	}
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.Backend.CreateBatch(ctx, blobs)
}

// Shard registrations run MaxShardPuts at a time: the others wait for a slot (on main every one
// ran at once).
func TestShardRegistrationsTakeSlots(t *testing.T) {
	dir := t.TempDir()
	st0, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	be := &heldBackend{Backend: st0.Backend(), release: make(chan struct{})}
	st, err := store.Open(dir, store.Options{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.Store, c.MaxShardPuts, c.Log = st, 2, zerolog.Nop() })
	var wg sync.WaitGroup
	for i := range 6 {
		r := loadRef(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := e.token("", "org/r"+string(rune('a'+i)), scopeWrite, time.Hour)
			e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody, servertest.Bearer(tok)...)
			e.do("POST", "/v1/shards", r.shard, servertest.Bearer(tok)...)
		}()
	}
	if !testutil.Eventually(10*time.Second, func() bool { return be.held.Load() == 2 }) {
		t.Fatalf("%d registrations held, want 2", be.held.Load())
	}
	close(be.release)
	wg.Wait()
	if n := be.most.Load(); n > 2 {
		t.Fatalf("%d registrations at once, MaxShardPuts is 2", n)
	}
}

// One user's many registrations do not stop another user's: with both slots held by alice's
// registrations and four more of hers waiting, bob's registration takes the first slot that frees
// (before, every registration waited in one queue: bob's came seventh, behind all of hers).
func TestShardRegistrationsFairBetweenUsers(t *testing.T) {
	dir := t.TempDir()
	st0, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	be := &heldBackend{Backend: st0.Backend(), release: make(chan struct{})}
	st, err := store.Open(dir, store.Options{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.Store, c.MaxShardPuts, c.Log = st, 2, zerolog.Nop() })
	r := loadRef(t)
	register := func(wg *sync.WaitGroup, user, ns string) {
		tok := e.token(user, ns, scopeWrite, time.Hour)
		if res := e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody, servertest.Bearer(tok)...); res.status != 200 {
			t.Errorf("xorb: %v", res)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.do("POST", "/v1/shards", r.shard, servertest.Bearer(tok)...)
		}()
	}
	var wg sync.WaitGroup
	defer func() {
		close(be.release)
		wg.Wait()
	}()
	for i := range 6 {
		register(&wg, "alice", "alice/r"+strconv.Itoa(i))
	}
	// Alice's other four wait before their bodies are read (a user holds at most MaxShardPuts
	// shard bodies).
	if !testutil.Eventually(10*time.Second, func() bool { _, w := shardHandlers(); return be.held.Load() == 2 && w == 4 }) {
		_, w := shardHandlers()
		t.Fatalf("%d registrations held, %d uploads waiting; want alice's 2 held and 4 waiting", be.held.Load(), w)
	}
	register(&wg, "bob", "bob/r")
	if !testutil.Eventually(10*time.Second, func() bool { return inPutShard() == 3 }) {
		t.Fatalf("%d registrations in putShard, want bob's waiting too", inPutShard())
	}
	be.release <- struct{}{} // one of alice's ends
	if !testutil.Eventually(10*time.Second, func() bool { be.mu.Lock(); defer be.mu.Unlock(); return len(be.came) == 3 }) {
		t.Fatal("no registration took the freed slot")
	}
	be.mu.Lock()
	third := be.came[2]
	be.mu.Unlock()
	if want := "n" + base64.RawURLEncoding.EncodeToString([]byte("bob/r")); third != want {
		t.Fatalf("the freed slot went to %s, not to bob's registration (%s)", third, want)
	}
}

// inPutShard counts the goroutines in Server.putShard: registrations waiting for a slot or running.
func inPutShard() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "server.(*Server).putShard(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// A reconstruction answer holds at most Limits.ReconstructionTerms terms (a file of 800k terms
// answered hundreds of MB on main); the project's client asks for the rest and downloads the
// whole file, verified, and ranges of it.
func TestReconstructionAnswersAreCapped(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Limits.ReconstructionTerms = 3 })
	r := loadRef(t)
	tok := e.token("", "org/a", scopeWrite, time.Hour)
	if res := e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody, servertest.Bearer(tok)...); res.status != 200 {
		t.Fatal(res)
	}
	// The reference prefix as a file of one term per chunk.
	x := e.st
	foot, err := x.XorbFooter(context.Background(), r.xorbHash)
	if err != nil {
		t.Fatal(err)
	}
	var terms []shard.Term
	var entries []hash.Entry
	for i, h := range foot.ChunkHashes {
		n := foot.RawEnds[i]
		if i > 0 {
			n -= foot.RawEnds[i-1]
		}
		terms = append(terms, shard.Term{Xorb: r.xorbHash, UnpackedBytes: n, ChunkStart: uint32(i), ChunkEnd: uint32(i + 1)})
		entries = append(entries, hash.Entry{Hash: h, Size: uint64(n)})
	}
	f := testutil.NewFile(hash.File(entries), terms, foot.ChunkHashes, r.sha)
	if res := e.do("POST", "/v1/shards", (&shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}}).AppendUpload(nil), servertest.Bearer(tok)...); res.status != 200 {
		t.Fatal(res)
	}
	res := e.do("GET", "/v2/reconstructions/"+f.Hash.String(), nil, servertest.Bearer(tok)...)
	if p := decodeJSON[casapi.ReconstructionV2](t, res.body); res.status != 200 || len(p.Terms) != 3 {
		t.Fatalf("capped answer: %d, %d terms", res.status, len(p.Terms))
	}
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: e.base, Token: cas.NewRefreshingToken(tok, time.Time{}, nil), Retry: retry.Policy{Attempts: 1}})
	out := filepath.Join(t.TempDir(), "out")
	if err := download.Download(t.Context(), download.Config{CAS: c}, download.Request{File: f.Hash, SHA256: &r.sha, Size: int64(len(r.content)), Path: out}); err != nil {
		t.Fatalf("download of a file of 10 terms, 3 an answer: %v", err)
	}
	rng := &casapi.ByteRange{Start: 100_000, End: 700_000}
	if err := download.Download(t.Context(), download.Config{CAS: c}, download.Request{File: f.Hash, Range: rng, Size: -1, Path: out + ".part"}); err != nil {
		t.Fatalf("range download: %v", err)
	}
	if got, _ := os.ReadFile(out + ".part"); !bytes.Equal(got, r.content[rng.Start:rng.End+1]) {
		t.Fatal("range differs")
	}
}

// The batch answer for an upload of a stored object with another size does not say the stored
// size (on main: "object exists with size 810234, not 5").
func TestBatchSizeMismatchSaysOnlyTheClientsSize(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	tok := e.token("", "org/a", scopeWrite, time.Hour)
	e.uploadRef(r, servertest.Bearer(tok)...)
	obj := lfsbatch.Object{OID: hex.EncodeToString(r.sha[:]), Size: 5}
	_, br := e.batch("org/a", batchBody("upload", []string{"xet"}, obj))
	oe := br.Objects[0].Error
	if oe == nil || strings.Contains(oe.Message, strconv.Itoa(len(r.content))) {
		t.Fatalf("size mismatch: %+v", oe)
	}
}

// A batch request costs what a batch of maxBatchObjects objects may cost, whatever it sends: on
// main a 16 MiB request of 190,000 objects was decoded whole (about 116 MiB allocated, 80 MiB
// live, for any user who may read) before its object count refused it.
func TestBatchRequestCostsItsCap(t *testing.T) {
	e := newEnv(t, nil)
	var b strings.Builder
	b.WriteString(`{"operation":"download","objects":[`)
	for i := 0; b.Len() < 15<<20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"oid":"` + strings.Repeat("a", 60) + strconv.Itoa(1000+i%9000) + `","size":1}`)
	}
	b.WriteString(`]}`)
	body := []byte(b.String())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, _ := http.NewRequest("POST", "/org/r.git/info/lfs/objects/batch", bytes.NewReader(body))
	rec := &discardWriter{h: http.Header{}}
	if _, _, ok := e.srv.decodeBatch(rec, r); ok || rec.code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a batch request of %d MiB: ok %v, status %d; want 413", len(body)>>20, ok, rec.code)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Fatalf("refusing a batch request of %d MiB allocated %d MiB", len(body)>>20, n>>20)
	}
}

// existsCounter counts a backend's existence checks.
type existsCounter struct {
	blob.Backend
	n atomic.Int64
}

func (c *existsCounter) Exists(ctx context.Context, name string) (bool, error) {
	c.n.Add(1)
	return c.Backend.Exists(ctx, name)
}

// foreignXorbsShard is a shard of one file whose n terms each name a different xorb nobody
// uploaded.
func foreignXorbsShard(n int) []byte {
	f := shard.File{Hash: hash.Hash{7}, Terms: make([]shard.Term, n), Verification: make([]hash.Hash, n), HasSHA256: true, SHA256: hash.Hash{1}}
	for i := range f.Terms {
		x := hash.Hash{0xfe}
		copy(x[8:], strconv.Itoa(i))
		f.Terms[i] = shard.Term{Xorb: x, UnpackedBytes: 1, ChunkStart: 0, ChunkEnd: 1}
	}
	return (&shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}}).AppendUpload(nil)
}

// A shard naming 200,000 xorbs its repository may not name is refused as registration refuses
// it, quotas on or off, after a handful of lookups. Before, with quotas on, the server first
// looked up every xorb it named to count what the shard would add (one stat each, or one S3
// HEAD), held a shard-body slot all the while, and could be sent again and again: at 1.4 million
// terms, 8 s of CPU and 700 MiB a request on the filesystem, minutes on S3.
func TestShardNamingForeignXorbsIsRefusedBeforeCounting(t *testing.T) {
	body := foreignXorbsShard(200_000)
	for _, q := range []*Quotas{nil, {Default: 1 << 40}} {
		be := &existsCounter{}
		e := newEnv(t, func(c *Config) {
			fsb, err := fs.New(t.TempDir(), fs.Options{})
			if err != nil {
				t.Fatal(err)
			}
			be.Backend = fsb
			st, err := store.Open(t.TempDir(), store.Options{Backend: be})
			if err != nil {
				t.Fatal(err)
			}
			c.Store, c.Ingest = st, &UploadIngester{Store: st, Policy: xorb.PolicyAuto}
			c.Quotas = q
		})
		tok := e.token("", "org/a", scopeWrite, time.Hour)
		before := be.n.Load()
		res := e.do("POST", "/v1/shards", body, servertest.Bearer(tok)...)
		lookups := be.n.Load() - before
		t.Logf("quotas %v: %d lookups", q != nil, lookups)
		if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "was not uploaded to this repository") {
			t.Fatalf("quotas %v: a shard naming xorbs nobody uploaded: %v, want 400 naming the first xorb", q != nil, res)
		}
		if lookups > 16 {
			t.Fatalf("quotas %v: the refused shard cost %d lookups, want a handful", q != nil, lookups)
		}
	}
}
