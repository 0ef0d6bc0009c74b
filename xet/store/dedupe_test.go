package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash/hashtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

func TestGlobalDedupe(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	now := time.Unix(1758663941, 0)
	s, err := Open(t.TempDir(), Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	xa, xb := r.xorb(0, 1, 2, 3, 4), r.xorb(5, 6, 7, 8, 9)
	mustPutXorb(t, s, xa)
	mustPutXorb(t, s, xb)
	f := r.file(seg{xb, 1, 5}, seg{xa, 0, 5})
	if _, err := s.PutShard(ctx, "", r.shardBytes([]*testFile{f}, xa, xb)); err != nil {
		t.Fatal(err)
	}
	first := r.hashes[6] // the file's first chunk: chunk 1 of xorb B
	data, err := s.GlobalDedupe(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := shard.Parse(data)
	if err != nil {
		t.Fatalf("dedupe answer does not parse: %v", err)
	}
	if !sh.Keyed() || len(sh.Files) != 0 || len(sh.Xorbs) != 1 || sh.Xorbs[0].Hash != xb.hash {
		t.Fatalf("dedupe shard: keyed %v, %d files, %d xorbs", sh.Keyed(), len(sh.Files), len(sh.Xorbs))
	}
	key := sh.Footer.HMACKey
	if sh.Footer.CreatedAt != uint64(now.Unix()) || sh.Footer.ExpiresAt != uint64(now.Add(7*24*time.Hour).Unix()) {
		t.Errorf("footer times %d, %d", sh.Footer.CreatedAt, sh.Footer.ExpiresAt)
	}
	x := sh.Xorbs[0]
	want := r.shardXorb(xb)
	if len(x.Chunks) != 5 || x.BytesInXorb != want.BytesInXorb {
		t.Fatalf("xorb entry: %d chunks, %d bytes", len(x.Chunks), x.BytesInXorb)
	}
	for i, c := range x.Chunks {
		if c.Hash != hash.Keyed(key, want.Chunks[i].Hash) || c.RawStart != want.Chunks[i].RawStart || c.RawLen != want.Chunks[i].RawLen {
			t.Errorf("chunk %d: %+v, want keyed %+v", i, c, want.Chunks[i])
		}
	}
	// The client's lookup: key its chunk hash and find it among the entries.
	if _, _, ok := sh.FindChunk(first); !ok {
		t.Error("the queried chunk is not found in the answer by its keyed hash")
	}
	again, err := s.GlobalDedupe(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	sh2, err := shard.Parse(again)
	if err != nil || sh2.Footer.HMACKey == key {
		t.Errorf("a second answer should use a fresh key (err %v)", err)
	}
	// Only the first chunk and hash%1024 == 0 chunks are indexed.
	for i, h := range r.hashes {
		_, err := s.GlobalDedupe(ctx, h)
		indexed := i == 6 || h.Mod(DedupeModulus) == 0
		if indexed != (err == nil) || (!indexed && !errors.Is(err, ErrNotFound)) {
			t.Errorf("chunk %d: indexed %v, GlobalDedupe err %v", i, indexed, err)
		}
	}
}

// TestDedupeShardGolden rebuilds the reference global-dedupe answer from the CSV's chunk list with
// its key and timestamps: the bytes must equal the Hub's.
func TestDedupeShardGolden(t *testing.T) {
	ref := vectors.ReadFile(t, "ev-population.csv.shard.dedupe")
	sh, err := shard.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	m := &xorbMeta{hash: sh.Xorbs[0].Hash}
	var raw uint32
	for _, l := range vectors.ReferenceChunks(t) {
		raw += uint32(l.Size)
		m.hashes = append(m.hashes, hashtest.MustParse(l.Hash))
		m.rawEnds = append(m.rawEnds, raw)
		m.boundEnds = append(m.boundEnds, uint32(len(m.boundEnds)+1)*8) // not part of the answer
	}
	got := dedupeShard(m, sh.Footer.HMACKey, time.Unix(int64(sh.Footer.CreatedAt), 0), time.Unix(int64(sh.Footer.ExpiresAt), 0))
	if !bytes.Equal(got, ref) {
		t.Fatalf("dedupe shard differs from the reference (%d vs %d bytes)", len(got), len(ref))
	}
}

// TestGlobalDedupeAnswerCostsNoAllocationPerChunk: a global-dedupe answer keys every chunk hash of
// the xorb (about 1024 in a full one), and each query of a busy server pays for it. Keying them must
// not allocate per chunk (a BLAKE3 state is kilobytes: a fresh one per chunk made the answer's
// allocation, and the GC it brings, most of a query's time at 1024 chunks).
func TestGlobalDedupeAnswerCostsNoAllocationPerChunk(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const chunks = 1024
	b := xorb.NewBuilder(xorb.PolicyNone)
	var entries []hash.Entry
	var hashes []hash.Hash
	content := make([]byte, 0, chunks*8)
	for i := range chunks {
		data := binary.LittleEndian.AppendUint64(nil, uint64(i))
		h := hash.Chunk(data)
		b.Add(data, h)
		entries, hashes = append(entries, hash.Entry{Hash: h, Size: 8}), append(hashes, h)
		content = append(content, data...)
	}
	x := b.Finish()
	if _, err := s.PutBuiltXorb(ctx, "", x); err != nil {
		t.Fatal(err)
	}
	term := shard.Term{Xorb: x.Hash, UnpackedBytes: uint32(len(content)), ChunkStart: 0, ChunkEnd: chunks}
	f, err := shard.UploadFile(hash.File(entries), []shard.Term{term}, []hash.Hash{hash.Verification(hashes)}, sha256.Sum256(content))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutShardTrusted(ctx, "", rawShard([]shard.File{f}, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GlobalDedupe(ctx, hashes[0]); err != nil { // the xorb's footer is cached from here on
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := s.GlobalDedupe(ctx, hashes[0]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs >= chunks/4 {
		t.Errorf("a global-dedupe answer for a xorb of %d chunks made %.0f allocations, want fewer than %d", chunks, allocs, chunks/4)
	}
}
