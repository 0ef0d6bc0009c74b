package upload_test

// Test kit of the upload tests: chunk-exact test data (blocks that are content-defined chunks on
// their own), an instrumented cas.Client and a fake ShardCache. Only the exported API of the
// packages is used, so the session's internals can change freely.

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// blockSize is the size of a test block: exactly chunk.MinSize, so that a block whose last 64
// bytes hash (rolling gear hash) to a value with the mask bits clear is cut right at its end.
const blockSize = chunk.MinSize

// blockTail is 64 bytes after which the gear hash (started from 0) has h&chunk.Mask == 0. The
// hash at a chunk's byte MinSize depends only on its last 64 bytes, so any blockSize-byte block
// ending with blockTail is a whole chunk, whatever precedes or follows it: a file made of such
// blocks is chunked exactly into those blocks.
var blockTail = func() [64]byte {
	r := rand.New(rand.NewPCG(0x7e57, 0xb10c))
	var t [64]byte
	for {
		for i := range t {
			t[i] = byte(r.Uint32())
		}
		var h uint64
		for _, b := range t[:62] {
			h = h + h + chunk.Gear[b]
		}
		for j := range 1 << 16 {
			b0, b1 := byte(j), byte(j>>8)
			if (h<<2+chunk.Gear[b0]<<1+chunk.Gear[b1])&chunk.Mask == 0 {
				t[62], t[63] = b0, b1
				return t
			}
		}
	}
}()

// block returns the block of seed: a pseudo-random body (seed in its first 8 bytes) then blockTail.
func block(seed uint64) []byte {
	b := make([]byte, blockSize)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := 0; i+8 <= blockSize-64; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	binary.LittleEndian.PutUint64(b[0:], seed)
	copy(b[blockSize-64:], blockTail[:])
	return b
}

// eligibleBlocks returns n distinct blocks whose chunk hash % 1024 == 0 (global-dedupe eligible),
// searching seeds from base upwards. Only the first 8 bytes change between candidates.
func eligibleBlocks(t testing.TB, n int, base uint64) [][]byte {
	t.Helper()
	var out [][]byte
	b := block(base)
	for seed := base; len(out) < n; seed++ {
		binary.LittleEndian.PutUint64(b[0:], seed)
		if hash.Chunk(b).Mod(1024) == 0 {
			out = append(out, append([]byte(nil), b...))
		}
		if seed-base > uint64(n)*1024*40 {
			t.Fatalf("found only %d eligible blocks in %d seeds", len(out), seed-base)
		}
	}
	return out
}

// blocks returns n blocks from seeds base, base+1, ...
func blocks(n int, base uint64) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = block(base + uint64(i))
	}
	return out
}

// join concatenates blocks into a file and checks that the chunker cuts it back into them.
func join(t testing.TB, bs ...[]byte) []byte {
	t.Helper()
	var f []byte
	for _, b := range bs {
		f = append(f, b...)
	}
	ends := chunkBoundaries(f)
	if len(ends) != len(bs) {
		t.Fatalf("test data: %d blocks chunk into %d chunks", len(bs), len(ends))
	}
	for i, e := range ends {
		if e != (i+1)*blockSize {
			t.Fatalf("test data: chunk %d ends at %d, want %d", i, e, (i+1)*blockSize)
		}
	}
	return f
}

// chunkEntries chunks data in memory and hashes each chunk (the reference the session must match).
type chunkInfo struct {
	entry hash.Entry
	off   int64
}

func chunkEntries(data []byte) []chunkInfo {
	var out []chunkInfo
	start := 0
	for _, end := range chunkBoundaries(data) {
		c := data[start:end]
		out = append(out, chunkInfo{entry: hash.Entry{Hash: hash.Chunk(c), Size: uint64(len(c))}, off: int64(start)})
		start = end
	}
	return out
}

func entriesOf(cs []chunkInfo) []hash.Entry {
	out := make([]hash.Entry, len(cs))
	for i, c := range cs {
		out[i] = c.entry
	}
	return out
}

// recCAS is a cas.Client that records what a session asks of it and passes the calls to inner
// (when inner is nil it stores nothing: every query misses, every upload succeeds).
type recCAS struct {
	inner cas.Client

	mu       sync.Mutex
	queries  []hash.Hash // QueryChunk arguments, in call order
	answers  [][]byte    // QueryChunk answers that were not misses
	xorbs    []hash.Hash // PutXorb arguments
	shards   [][]byte    // PutShard bodies
	blockPut bool        // PutXorb waits for its context to end
	putDone  int         // PutXorb calls that returned
	// queryDelay and hasDelay are how long a QueryChunk and a HasXorb take (a round trip), unless
	// the call's context ends first; asking counts those calls under way.
	queryDelay, hasDelay time.Duration
	asking               int
}

func (c *recCAS) QueryChunk(ctx context.Context, h hash.Hash) ([]byte, error) {
	c.mu.Lock()
	c.queries = append(c.queries, h)
	c.asking++
	c.mu.Unlock()
	defer c.asked()
	if err := roundTrip(ctx, c.queryDelay); err != nil {
		return nil, err
	}
	if c.inner == nil {
		return nil, cas.ErrNotFound
	}
	b, err := c.inner.QueryChunk(ctx, h)
	if err == nil {
		c.mu.Lock()
		c.answers = append(c.answers, append([]byte(nil), b...))
		c.mu.Unlock()
	}
	return b, err
}

func (c *recCAS) HasXorb(ctx context.Context, x hash.Hash) (bool, error) {
	c.mu.Lock()
	c.asking++
	c.mu.Unlock()
	defer c.asked()
	if err := roundTrip(ctx, c.hasDelay); err != nil {
		return false, err
	}
	return c.inner.HasXorb(ctx, x)
}

// roundTrip waits d, or until ctx ends.
func roundTrip(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *recCAS) asked() {
	c.mu.Lock()
	c.asking--
	c.mu.Unlock()
}

// questions is how many QueryChunk and HasXorb calls are under way.
func (c *recCAS) questions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asking
}

func (c *recCAS) PutXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	h := x.Hash
	c.mu.Lock()
	c.xorbs = append(c.xorbs, h)
	block := c.blockPut
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.putDone++
		c.mu.Unlock()
	}()
	if block {
		<-ctx.Done()
		return false, ctx.Err()
	}
	if c.inner == nil {
		return true, nil
	}
	return c.inner.PutXorb(ctx, x)
}

func (c *recCAS) PutShard(ctx context.Context, body []byte) error {
	c.mu.Lock()
	c.shards = append(c.shards, append([]byte(nil), body...))
	c.mu.Unlock()
	if c.inner == nil {
		return nil
	}
	return c.inner.PutShard(ctx, body)
}

func (c *recCAS) Reconstruct(ctx context.Context, file hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	return c.inner.Reconstruct(ctx, file, rng)
}

func (c *recCAS) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	return c.inner.Fetch(ctx, x, f, r)
}

func (c *recCAS) XorbFooter(ctx context.Context, x hash.Hash, f casapi.XorbFetch) (*xorb.Footer, error) {
	return c.inner.XorbFooter(ctx, x, f)
}

// counts returns the number of queries, xorb uploads and shard uploads so far.
func (c *recCAS) counts() (queries, xorbs, shards int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queries), len(c.xorbs), len(c.shards)
}

// lastShard parses the last shard uploaded.
func (c *recCAS) lastShard(t testing.TB) *shard.Shard {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.shards) == 0 {
		t.Fatal("no shard was uploaded")
	}
	sh, err := shard.Parse(c.shards[len(c.shards)-1])
	if err != nil {
		t.Fatalf("uploaded shard does not parse: %v", err)
	}
	return sh
}

// fileTerms returns the terms of file h in sh.
func fileTerms(t testing.TB, sh *shard.Shard, h hash.Hash) []shard.Term {
	t.Helper()
	i, ok := sh.FindFile(h)
	if !ok {
		t.Fatalf("file %s is not in the uploaded shard", h)
	}
	return sh.Files[i].Terms
}

// fakeCache is a ShardCache in memory: it indexes the xorbs of the shards it is given (the keyed
// ones of global-dedupe answers under their key) and counts lookups.
type fakeCache struct {
	mu      sync.Mutex
	lookups int
	owned   []*shard.Shard
	dedupe  [][]byte
	plain   map[hash.Hash]shard.Match
	keyed   []*shard.Shard
	forgot  []hash.Hash
}

func newFakeCache() *fakeCache { return &fakeCache{plain: make(map[hash.Hash]shard.Match)} }

func (c *fakeCache) Lookup(h hash.Hash) (shard.Match, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookups++
	if m, ok := c.plain[h]; ok {
		return m, true, nil
	}
	for _, sh := range c.keyed {
		if x, ci, ok := sh.FindChunk(h); ok {
			return shard.Match{Xorb: sh.Xorbs[x].Hash, Index: uint32(ci), Chunks: sh.Xorbs[x].Chunks,
				Key: sh.Footer.HMACKey}, true, nil
		}
	}
	return shard.Match{}, false, nil
}

func (c *fakeCache) AddOwn(s *shard.Shard) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.owned = append(c.owned, s)
	for _, x := range s.Xorbs {
		for i, ch := range x.Chunks {
			if _, ok := c.plain[ch.Hash]; !ok {
				c.plain[ch.Hash] = shard.Match{Xorb: x.Hash, Index: uint32(i), Chunks: x.Chunks}
			}
		}
	}
	return nil
}

func (c *fakeCache) AddDedupe(data []byte) error {
	sh, err := shard.Parse(data)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dedupe = append(c.dedupe, append([]byte(nil), data...))
	if sh.Keyed() {
		c.keyed = append(c.keyed, sh)
	}
	return nil
}

func (c *fakeCache) lookupCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lookups
}

var _ upload.ShardCache = (*fakeCache)(nil)

// uploadFiles uploads files in one session and finishes it.
func uploadFiles(t testing.TB, cfg upload.Config, files ...[]byte) []*upload.FileResult {
	t.Helper()
	ctx := context.Background()
	s := upload.NewSession(cfg)
	var out []*upload.FileResult
	for i, f := range files {
		r, err := s.Upload(ctx, bytesReader(f), nil, nil)
		if err != nil {
			t.Fatalf("upload file %d: %v", i, err)
		}
		out = append(out, r)
	}
	if err := s.Finish(ctx); err != nil {
		t.Fatalf("finish: %v", err)
	}
	return out
}

func bytesReader(b []byte) io.Reader { return &sliceReader{b: b} }

// sliceReader is a plain reader (no WriterTo/ReaderAt shortcuts), like a file.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// goroutinesSettle waits until no goroutine runs that did not run at base (goleak.IgnoreCurrent
// at the test's start), and fails with their stacks otherwise.
func goroutinesSettle(t *testing.T, base goleak.Option) {
	t.Helper()
	goleak.VerifyNone(t, base)
}

// policyNone keeps the xorb builder cheap: test data is random anyway.
const policyNone = xorb.PolicyNone

// chunkBoundaries returns the cumulative end offsets of the chunks of data (a whole file) from a
// plain chunk.Next loop: the in-memory reference the session's streaming chunker must match.
func chunkBoundaries(data []byte) []int {
	var out []int
	for pos := 0; pos < len(data); {
		k := chunk.Next(data[pos:])
		if k == 0 {
			k = len(data) - pos
		}
		pos += k
		out = append(out, pos)
	}
	return out
}

// Forget records the xorbs it is asked to drop and drops the hits naming them.
func (c *fakeCache) Forget(xs []hash.Hash) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgot = append(c.forgot, xs...)
	n := 0
	for h, m := range c.plain {
		for _, x := range xs {
			if m.Xorb == x {
				delete(c.plain, h)
				n++
			}
		}
	}
	return n, nil
}
