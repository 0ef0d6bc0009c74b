package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestPutXorbRejects(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	good := r.xorb(0, 1, 2)

	corrupt := bytes.Clone(good.body)
	corrupt[r.infos[1].Start+40] ^= 0x55 // inside chunk 1's LZ4 payload

	badHeader := bytes.Clone(good.body)
	badHeader[r.infos[1].Start+4] = 7 // unknown compression scheme

	overRaw := bytes.Clone(good.body) // header claiming a raw length over 128 KiB
	overRaw[r.infos[1].Start+5], overRaw[r.infos[1].Start+6], overRaw[r.infos[1].Start+7] = 0x01, 0x00, 0x02

	var tooMany []byte // 8193 one-byte chunks
	var manyEntries []hash.Entry
	for i := 0; i <= xorb.MaxChunks; i++ {
		tooMany = testutil.AppendRecord(tooMany, []byte{byte(i)}, xorb.SchemeNone)
		manyEntries = append(manyEntries, hash.Entry{Hash: hash.Chunk([]byte{byte(i)}), Size: 1})
	}

	// 513 incompressible chunks of 128 KiB: over 64 MiB raw and over 64 MiB serialized, which no
	// client writes (compressible data over 64 MiB raw within 64 MiB serialized is accepted: see
	// TestPutXorbAcceptsSerializedCap).
	var tooBig []byte
	var bigEntries []hash.Entry
	for i := 0; i < 513; i++ {
		raw := testutil.RandomBytes(xorb.MaxChunkRaw, uint64(i))
		tooBig = testutil.AppendRecord(tooBig, raw, xorb.SchemeNone)
		bigEntries = append(bigEntries, hash.Entry{Hash: hash.Chunk(raw), Size: uint64(len(raw))})
	}

	cases := []struct {
		name   string
		h      hash.Hash
		body   io.Reader
		reason string
	}{
		{"wrong hash", r.xorb(0, 1, 3).hash, bytes.NewReader(good.body), "mismatch"},
		{"corrupted payload", good.hash, bytes.NewReader(corrupt), "mismatch"},
		{"bad scheme", good.hash, bytes.NewReader(badHeader), "chunk 1"},
		{"raw length over limit", good.hash, bytes.NewReader(overRaw), "chunk 1"},
		{"truncated", good.hash, bytes.NewReader(good.body[:len(good.body)-5]), "chunk 2"},
		{"truncated header", good.hash, bytes.NewReader(good.body[:r.infos[2].Start+3]), "chunk 2"},
		{"empty", hash.Zero, bytes.NewReader(nil), "no chunks"},
		{"too many chunks", hash.Merkle(manyEntries), bytes.NewReader(tooMany), "8192"},
		{"too many raw bytes", hash.Merkle(bigEntries), bytes.NewReader(tooBig), "67108864"},
		{"body too long", good.hash, io.LimitReader(zeros{}, MaxXorbBodyBytes+10), "exceeds"},
	}
	s := openStore(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ins, err := s.PutXorb(ctx, c.h, c.body)
			var inv *InvalidError
			if !errors.As(err, &inv) || ins {
				t.Fatalf("PutXorb = %v, %v; want an InvalidError", ins, err)
			}
			if !strings.Contains(inv.Reason, c.reason) {
				t.Errorf("reason %q does not mention %q", inv.Reason, c.reason)
			}
			if ok, _ := s.HasXorb(ctx, c.h); ok {
				t.Error("rejected xorb is stored")
			}
		})
	}
	if names, err := s.Backend().List(ctx, "xorbs/"); err != nil || len(names) != 0 {
		t.Fatalf("xorbs after rejections: %v, %v", names, err)
	}
	// A reader error is reported as such, not as invalid input.
	_, err := s.PutXorb(ctx, good.hash, io.MultiReader(bytes.NewReader(good.body[:100]), errReader{}))
	var inv *InvalidError
	if err == nil || errors.As(err, &inv) || !errors.Is(err, errBoom) {
		t.Fatalf("reader failure: %v", err)
	}
}

var errBoom = errors.New("boom")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBoom }

func TestPutShardRejects(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	s := openStore(t)
	xa, xb := r.xorb(0, 1, 2, 3, 4), r.xorb(5, 6, 7, 8, 9)
	mustPutXorb(t, s, xa)
	missing := r.xorb(5, 6, 7) // never stored
	good := r.file(seg{xa, 0, 3}, seg{xa, 3, 5})

	mutate := func(fn func(f *shard.File)) []shard.File {
		f := good.file
		f.Terms = append([]shard.Term(nil), f.Terms...)
		f.Verification = append([]hash.Hash(nil), f.Verification...)
		fn(&f)
		return []shard.File{f}
	}
	other := r.file(seg{xb, 0, 2})
	goodXorb := r.shardXorb(xa)
	badXorb := r.shardXorb(xa)
	badXorb.Chunks = append([]shard.XorbChunk(nil), badXorb.Chunks...)
	badXorb.Chunks[2].RawLen++
	shortXorb := r.shardXorb(xa)
	shortXorb.Chunks = shortXorb.Chunks[:4]
	bytesXorb := r.shardXorb(xa)
	bytesXorb.BytesInXorb--

	cases := []struct {
		name   string
		body   []byte
		reason string
	}{
		{"garbage", []byte("not a shard at all, clearly not"), "shard"},
		{"wrong verification", rawShard(mutate(func(f *shard.File) { f.Verification[1][0] ^= 1 }), nil), "verification"},
		{"no verification", rawShard(mutate(func(f *shard.File) { f.Verification = nil }), nil), "verification"},
		{"missing xorb", rawShard([]shard.File{r.file(seg{missing, 0, 3}).file}, nil), "not stored"},
		{"missing xorb in section", rawShard([]shard.File{good.file}, []shard.Xorb{r.shardXorb(missing)}), "not stored"},
		{"range out of bounds", rawShard(mutate(func(f *shard.File) { f.Terms[1].ChunkEnd = 6 }), nil), "out of bounds"},
		{"empty range", rawShard(mutate(func(f *shard.File) { f.Terms[1].ChunkStart = 5 }), nil), "empty"},
		{"wrong unpacked bytes", rawShard(mutate(func(f *shard.File) { f.Terms[0].UnpackedBytes-- }), nil), "unpacked bytes"},
		{"wrong file hash", rawShard(mutate(func(f *shard.File) { f.Hash = other.hash }), nil), "file hash mismatch"},
		{"missing sha256", rawShard(mutate(func(f *shard.File) { f.HasSHA256 = false }), nil), "SHA-256"},
		{"xorb section chunk", rawShard([]shard.File{good.file}, []shard.Xorb{badXorb}), "chunk 2"},
		{"xorb section count", rawShard([]shard.File{good.file}, []shard.Xorb{shortXorb}), "chunks"},
		{"xorb section bytes", rawShard([]shard.File{good.file}, []shard.Xorb{bytesXorb}), "bytes in xorb"},
		// One bad file spoils the shard: the good file is not registered either.
		{"one bad file of two", rawShard(append([]shard.File{good.file}, mutate(func(f *shard.File) { f.Hash = other.hash })...), []shard.Xorb{goodXorb}), "file hash mismatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			existed, err := s.PutShard(ctx, "ns", c.body)
			var inv *InvalidError
			if !errors.As(err, &inv) || existed {
				t.Fatalf("PutShard = %v, %v; want an InvalidError", existed, err)
			}
			if !strings.Contains(inv.Reason, c.reason) {
				t.Errorf("reason %q does not mention %q", inv.Reason, c.reason)
			}
		})
	}
	for _, prefix := range []string{"files/", "ns/", "dedupe/"} {
		if names, err := s.Backend().List(ctx, prefix); err != nil || len(names) != 0 {
			t.Fatalf("%s after rejections: %v, %v", prefix, names, err)
		}
	}
	if _, _, err := s.LookupSHA256(ctx, "ns", hash.FromSHA256(good.sha)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LookupSHA256 after rejections: %v", err)
	}
	// The same good file is accepted.
	if _, err := s.PutShard(ctx, "ns", rawShard([]shard.File{good.file}, []shard.Xorb{goodXorb})); err != nil {
		t.Fatalf("good shard: %v", err)
	}
}

// A xorb capped by its serialized size, as huggingface.js cuts them (here 600 chunks of 128 KiB of
// compressible data: 75 MiB raw in far less serialized), is accepted and reads back.
func TestPutXorbAcceptsSerializedCap(t *testing.T) {
	if testing.Short() {
		t.Skip("a 75 MiB xorb; runs without -short")
	}
	ctx := context.Background()
	var body []byte
	var entries []hash.Entry
	var content []byte
	for i := 0; i < 600; i++ {
		raw := bytes.Repeat([]byte(fmt.Sprintf("row %06d,make,model,year\n", i)), xorb.MaxChunkRaw/26+1)[:xorb.MaxChunkRaw]
		body = testutil.AppendRecord(body, raw, xorb.SchemeLZ4)
		entries = append(entries, hash.Entry{Hash: hash.Chunk(raw), Size: uint64(len(raw))})
		content = append(content, raw...)
	}
	if len(content) <= xorb.MaxBytes || len(body) > xorb.MaxSerializedBytes {
		t.Fatalf("test data: %d raw bytes in %d serialized", len(content), len(body))
	}
	s := openStore(t)
	h := hash.Merkle(entries)
	if ins, err := s.PutXorb(ctx, h, bytes.NewReader(body)); !ins || err != nil {
		t.Fatalf("PutXorb of a %d MiB raw / %d MiB serialized xorb = %v, %v", len(content)>>20, len(body)>>20, ins, err)
	}
	if ok, err := s.HasXorb(ctx, h); !ok || err != nil {
		t.Fatalf("not stored: %v", err)
	}
}
