package upload_test

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// downloadEq downloads r's file from c and compares it with want.
func downloadEq(t testing.TB, c cas.Client, r *upload.FileResult, want []byte) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out")
	sum := r.SHA256
	err := download.Download(context.Background(), download.Config{CAS: c}, download.Request{
		File: r.FileHash, SHA256: &sum, Size: r.Size, Path: p})
	if err != nil {
		t.Fatalf("download of %s: %v", r.FileHash, err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file %s differs after the round trip (%d bytes, want %d)", r.FileHash, len(got), len(want))
	}
}

// Chunks this session already holds are deduped from the session's own index: neither the local
// shard cache nor the global dedupe is asked about them.
func TestSessionChunksDedupedBeforeCache(t *testing.T) {
	bs := blocks(40, 1000)
	f := join(t, bs...)
	rev := make([][]byte, len(bs))
	for i := range bs {
		rev[i] = bs[len(bs)-1-i]
	}
	g := join(t, rev...) // the same chunks, each one its own match

	local := embeddedtest.New(t)
	cache := newFakeCache()
	cc := &recCAS{inner: local}
	s := upload.NewSession(upload.Config{CAS: cc, Cache: cache, GlobalDedupe: true, Policy: policyNone})
	ctx := context.Background()
	r1, err := s.Upload(ctx, bytesReader(f), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r1.NewBytes != int64(len(f)) || r1.DedupedBytes != 0 {
		t.Fatalf("first file: new %d deduped %d, want all %d bytes new", r1.NewBytes, r1.DedupedBytes, len(f))
	}
	lookups := cache.lookupCount()
	queries, _, _ := cc.counts()
	if lookups == 0 {
		t.Fatal("the local shard cache was never consulted about new chunks")
	}
	if queries == 0 {
		t.Fatal("the file's first chunk was not asked to the global dedupe")
	}

	var res []*upload.FileResult
	for _, data := range [][]byte{f, g} {
		r, err := s.Upload(ctx, bytesReader(data), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.NewBytes != 0 || r.DedupedBytes != int64(len(data)) {
			t.Fatalf("chunks already in the session: new %d deduped %d of %d bytes", r.NewBytes, r.DedupedBytes, len(data))
		}
		res = append(res, r)
	}
	if n := cache.lookupCount(); n != lookups {
		t.Fatalf("chunks already in the session were looked up in the shard cache (%d lookups, %d before)", n, lookups)
	}
	if q, _, _ := cc.counts(); q != queries {
		t.Fatalf("chunks already in the session were asked to the global dedupe (%d queries, %d before)", q, queries)
	}
	if err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	sh := cc.lastShard(t)
	if n := len(fileTerms(t, sh, r1.FileHash)); n != 1 {
		t.Fatalf("a file of 40 new chunks in one xorb has %d terms, want 1", n)
	}
	if n := len(fileTerms(t, sh, res[1].FileHash)); n != len(bs) {
		t.Fatalf("the reversed file has %d terms, want %d (one per chunk)", n, len(bs))
	}
	downloadEq(t, local, r1, f)
	downloadEq(t, local, res[1], g)
}

// A second session whose shard cache holds the first session's shard (AddOwn at Finish) uploads no
// new bytes for the same file and asks nothing of the global dedupe.
func TestCacheDedupesAcrossSessions(t *testing.T) {
	f := testutil.RandomBytes(3<<20+123, 1)
	local := embeddedtest.New(t)
	cache := newFakeCache()
	cc1 := &recCAS{inner: local}
	r1 := uploadFiles(t, upload.Config{CAS: cc1, Cache: cache, GlobalDedupe: true}, f)[0]
	if len(cache.owned) != 1 {
		t.Fatalf("Finish added %d shards to the cache, want 1", len(cache.owned))
	}
	own := cache.owned[0]

	cc2 := &recCAS{inner: local}
	r2 := uploadFiles(t, upload.Config{CAS: cc2, Cache: cache, GlobalDedupe: true}, f)[0]
	q, x, s := cc2.counts()
	if q != 0 {
		t.Fatalf("%d global dedupe queries for a file the shard cache knows", q)
	}
	if x != 0 {
		t.Fatalf("%d xorbs uploaded for a file the shard cache knows", x)
	}
	if s != 1 {
		t.Fatalf("%d shards uploaded, want 1 (the file must still be registered)", s)
	}
	if r2.NewBytes != 0 || r2.DedupedBytes != r2.Size || r2.FileHash != r1.FileHash {
		t.Fatalf("second session: new %d deduped %d size %d hash %s (first %s)", r2.NewBytes, r2.DedupedBytes,
			r2.Size, r2.FileHash, r1.FileHash)
	}
	for i, tm := range fileTerms(t, cc2.lastShard(t), r2.FileHash) {
		if _, ok := own.FindXorb(tm.Xorb); !ok {
			t.Fatalf("term %d names xorb %s, not one of the cached shard", i, tm.Xorb)
		}
	}
	downloadEq(t, local, r2, f)
}

// A global-dedupe answer is keyed: the session matches hash.Keyed(key, chunk) against it, dedupes
// the file against its xorb, and hands the answer to the cache byte for byte.
func TestKeyedGlobalAnswerIsUsed(t *testing.T) {
	f := testutil.RandomBytes(2<<20, 2)
	chunks := chunkEntries(f)
	local := embeddedtest.New(t)
	uploadFiles(t, upload.Config{CAS: local}, f)

	cache := newFakeCache()
	cc := &recCAS{inner: local}
	r := uploadFiles(t, upload.Config{CAS: cc, Cache: cache, GlobalDedupe: true}, f)[0]
	q, x, _ := cc.counts()
	if q == 0 || cc.queries[0] != chunks[0].entry.Hash {
		t.Fatalf("queries %v: the file's first chunk %s was not asked first", cc.queries, chunks[0].entry.Hash)
	}
	if len(cc.answers) == 0 {
		t.Fatal("the store gave no global dedupe answer for the file's first chunk")
	}
	ans, err := shard.Parse(cc.answers[0])
	if err != nil {
		t.Fatal(err)
	}
	if !ans.Keyed() {
		t.Fatal("test precondition: the store's dedupe answer is not keyed")
	}
	for _, xs := range ans.Xorbs {
		for _, c := range xs.Chunks {
			if c.Hash == chunks[0].entry.Hash {
				t.Fatal("test precondition: the keyed answer holds the plain chunk hash")
			}
		}
	}
	if r.NewBytes != 0 || r.DedupedBytes != int64(len(f)) {
		t.Fatalf("after a keyed answer for the whole xorb: new %d deduped %d of %d", r.NewBytes, r.DedupedBytes, len(f))
	}
	if x != 0 {
		t.Fatalf("%d xorbs uploaded for a file deduped globally", x)
	}
	if len(cache.dedupe) == 0 || !bytes.Equal(cache.dedupe[0], cc.answers[0]) {
		t.Fatalf("the answer was not passed to the cache's AddDedupe as received (%d added)", len(cache.dedupe))
	}
	downloadEq(t, local, r, f)
}

// wrongKeyCAS answers dedupe queries with the store's answer under another key: its chunk hashes
// then match nothing.
type wrongKeyCAS struct{ *recCAS }

func (c wrongKeyCAS) QueryChunk(ctx context.Context, h hash.Hash) ([]byte, error) {
	b, err := c.recCAS.QueryChunk(ctx, h)
	if err != nil {
		return nil, err
	}
	sh, err := shard.Parse(b)
	if err != nil {
		return nil, err
	}
	sh.Footer.HMACKey[0] ^= 1
	return sh.Marshal(), nil
}

func TestWrongKeyAnswerIsNotMatched(t *testing.T) {
	f := testutil.RandomBytes(1<<20, 3)
	local := embeddedtest.New(t)
	uploadFiles(t, upload.Config{CAS: local}, f)
	cc := &recCAS{inner: local}
	r := uploadFiles(t, upload.Config{CAS: wrongKeyCAS{cc}, GlobalDedupe: true}, f)[0]
	if len(cc.answers) == 0 {
		t.Fatal("test precondition: no dedupe answer")
	}
	if r.DedupedBytes != 0 || r.NewBytes != int64(len(f)) {
		t.Fatalf("an answer under a wrong key deduped %d bytes", r.DedupedBytes)
	}
	downloadEq(t, local, r, f)
}

// GlobalDedupe=false asks nothing, even for a file the CAS holds.
func TestNoQueriesWithoutGlobalDedupe(t *testing.T) {
	f := testutil.RandomBytes(1<<20, 4)
	local := embeddedtest.New(t)
	uploadFiles(t, upload.Config{CAS: local}, f)
	cc := &recCAS{inner: local}
	r := uploadFiles(t, upload.Config{CAS: cc, GlobalDedupe: false}, f)[0]
	if q, _, _ := cc.counts(); q != 0 {
		t.Fatalf("%d global dedupe queries with GlobalDedupe off", q)
	}
	if r.NewBytes != int64(len(f)) {
		t.Fatalf("new %d of %d bytes with no dedupe source", r.NewBytes, len(f))
	}
}

// Global queries go only to eligible chunks (the file's first, or hash % 1024 == 0) that no local
// source knows, at most one per QuerySpacing bytes of the file.
func TestGlobalQueriesEligibleAndSpaced(t *testing.T) {
	e := eligibleBlocks(t, 12, 1<<40)
	filler := func(n int, base uint64) [][]byte { return blocks(n, base) }
	var parts [][]byte
	parts = append(parts, filler(3, 5000)...)
	parts = append(parts, e[0:4]...)
	parts = append(parts, filler(520, 6000)...) // 4.26 MB without (designed) eligible chunks
	parts = append(parts, e[4:8]...)
	parts = append(parts, filler(520, 7000)...)
	parts = append(parts, e[8:12]...)
	f := join(t, parts...)
	chunks := chunkEntries(f)
	offset := make(map[hash.Hash]int64)
	for _, c := range chunks {
		offset[c.entry.Hash] = c.off
	}
	eligible := func(c chunkInfo) bool { return c.off == 0 || c.entry.Hash.Mod(1024) == 0 }
	greedy := func(spacing int64) []hash.Hash {
		var out []hash.Hash
		last := int64(-1)
		for _, c := range chunks {
			if eligible(c) && (last < 0 || c.off-last >= spacing) {
				out = append(out, c.entry.Hash)
				last = c.off
			}
		}
		return out
	}

	for _, tc := range []struct {
		name    string
		spacing int64 // Config.QuerySpacing
		rule    int64 // the spacing it means
	}{{"every eligible chunk", 1, 1}, {"default 4e6", 0, 4_000_000}, {"4e6", 4_000_000, 4_000_000}} {
		t.Run(tc.name, func(t *testing.T) {
			cc := &recCAS{}
			uploadFiles(t, upload.Config{CAS: cc, GlobalDedupe: true, QuerySpacing: tc.spacing, Policy: policyNone}, f)
			want := greedy(tc.rule)
			if tc.rule == 4_000_000 && len(want) < 3 {
				t.Fatalf("test data: only %d queries expected", len(want))
			}
			if tc.rule == 1 && len(want) < 13 {
				t.Fatalf("test data: only %d eligible chunks", len(want))
			}
			// Questions after a file's first chunk run in the background: they reach the CAS in any
			// order; which chunks are asked about is what counts. Finish waited for them.
			cc.mu.Lock()
			queries := slices.Clone(cc.queries)
			cc.mu.Unlock()
			slices.SortFunc(queries, func(a, b hash.Hash) int {
				oa, oka := offset[a]
				ob, okb := offset[b]
				if !oka || !okb {
					return 0
				}
				return cmp.Compare(oa, ob)
			})
			seen := make(map[hash.Hash]bool)
			last := int64(-1)
			for i, q := range queries {
				off, ok := offset[q]
				if !ok {
					t.Fatalf("query %d: %s is no chunk of the file", i, q)
				}
				if off != 0 && q.Mod(1024) != 0 {
					t.Fatalf("query %d: chunk at %d is not eligible (hash %% 1024 = %d)", i, off, q.Mod(1024))
				}
				if seen[q] {
					t.Fatalf("query %d: chunk at %d asked twice", i, off)
				}
				seen[q] = true
				if last >= 0 && off-last < tc.rule {
					t.Fatalf("queries at offsets %d and %d are closer than %d bytes", last, off, tc.rule)
				}
				last = off
			}
			if len(queries) != len(want) {
				t.Fatalf("%d global queries, want %d (eligible chunks %d bytes apart at least)", len(queries), len(want), tc.rule)
			}
			for i := range want {
				if queries[i] != want[i] {
					t.Fatalf("query %d asks the chunk at %d, want the one at %d", i, offset[queries[i]], offset[want[i]])
				}
			}
		})
	}
}

// heldQueries answers a file's first chunk at once and holds every later question until release
// is closed (or its context ends).
type heldQueries struct {
	*recCAS
	first   hash.Hash
	release chan struct{}
}

func (c *heldQueries) QueryChunk(ctx context.Context, h hash.Hash) ([]byte, error) {
	if h != c.first {
		select {
		case <-c.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.recCAS.QueryChunk(ctx, h)
}

// Questions about chunks after a file's first run in the background (as xet-core's do): a file
// whose later questions are not answered yet is chunked and uploaded all the same, the answers
// taken up when they come.
func TestLaterGlobalQueriesDoNotHoldTheStream(t *testing.T) {
	e := eligibleBlocks(t, 4, 1<<40)
	var parts [][]byte
	parts = append(parts, blocks(3, 5000)...)
	parts = append(parts, e...)
	parts = append(parts, blocks(64, 6000)...)
	f := join(t, parts...)
	chunks := chunkEntries(f)
	c := &heldQueries{recCAS: &recCAS{}, first: chunks[0].entry.Hash, release: make(chan struct{})}
	s := upload.NewSession(upload.Config{CAS: c, GlobalDedupe: true, QuerySpacing: 1, Policy: policyNone})
	defer s.Close()
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := s.Upload(ctx, bytesReader(f), nil, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		close(c.release)
		t.Fatal("the upload waited for the answers to its later global-dedupe questions")
	}
	close(c.release)
	if err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if q, _, _ := c.counts(); q < 2 {
		t.Fatalf("%d global questions, want the first chunk's and later ones", q)
	}
}
