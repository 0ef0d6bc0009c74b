package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash/hashtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// refData is the reference material: the 10 chunk records of the reference xorb prefix, their
// decoded bytes (the first 810,234 bytes of the CSV) and hashes.
type refData struct {
	records []byte
	infos   []xorb.ChunkInfo // record offsets within records
	raws    [][]byte
	hashes  []hash.Hash
	prefix  []byte
}

func loadRef(t testing.TB) *refData {
	t.Helper()
	r := &refData{records: vectors.ReadFile(t, "ev-population.xorb.first-10-chunks")}
	if err := testutil.DecodeRecords(r.records, func(i int, raw []byte) error {
		r.raws = append(r.raws, bytes.Clone(raw))
		r.prefix = append(r.prefix, raw...)
		return nil
	}); err != nil {
		t.Fatalf("decoding reference records: %v", err)
	}
	lines := vectors.ReferenceChunks(t)[:10]
	for i, l := range lines {
		h := hashtest.MustParse(l.Hash)
		if hash.Chunk(r.raws[i]) != h || uint64(len(r.raws[i])) != l.Size {
			t.Fatalf("reference chunk %d does not match the .chunks list", i)
		}
		r.hashes = append(r.hashes, h)
	}
	if len(r.prefix) != 810234 {
		t.Fatalf("decoded prefix is %d bytes, want 810234", len(r.prefix))
	}
	info, err := xorb.Index(r.records)
	if err != nil {
		t.Fatal(err)
	}
	r.infos = info.Chunks
	return r
}

// testXorb is a xorb made of some of the reference records.
type testXorb struct {
	hash hash.Hash
	body []byte
	ref  []int // reference chunk index of each chunk
}

func (r *refData) xorb(idx ...int) *testXorb {
	x := &testXorb{ref: idx}
	var entries []hash.Entry
	for _, i := range idx {
		x.body = append(x.body, r.records[r.infos[i].Start:r.infos[i].End]...)
		entries = append(entries, hash.Entry{Hash: r.hashes[i], Size: uint64(len(r.raws[i]))})
	}
	x.hash = hash.Merkle(entries)
	return x
}

// shardXorb is the xorb-section entry of x.
func (r *refData) shardXorb(x *testXorb) shard.Xorb {
	sx := shard.Xorb{Hash: x.hash}
	for _, i := range x.ref {
		sx.Chunks = append(sx.Chunks, shard.XorbChunk{Hash: r.hashes[i], RawStart: sx.BytesInXorb, RawLen: uint32(len(r.raws[i]))})
		sx.BytesInXorb += uint32(len(r.raws[i]))
	}
	return sx
}

// seg is chunks [s, e) of a test xorb.
type seg struct {
	x    *testXorb
	s, e int
}

type testFile struct {
	hash    hash.Hash
	content []byte
	sha     [32]byte
	file    shard.File
}

// file builds a file made of segs, one term per seg.
func (r *refData) file(segs ...seg) *testFile {
	f := &testFile{}
	var terms []shard.Term
	var chunkHashes []hash.Hash
	var entries []hash.Entry
	for _, sg := range segs {
		var n uint32
		for c := sg.s; c < sg.e; c++ {
			i := sg.x.ref[c]
			f.content = append(f.content, r.raws[i]...)
			chunkHashes = append(chunkHashes, r.hashes[i])
			entries = append(entries, hash.Entry{Hash: r.hashes[i], Size: uint64(len(r.raws[i]))})
			n += uint32(len(r.raws[i]))
		}
		terms = append(terms, shard.Term{Xorb: sg.x.hash, UnpackedBytes: n, ChunkStart: uint32(sg.s), ChunkEnd: uint32(sg.e)})
	}
	f.hash = hash.File(entries)
	f.sha = sha256.Sum256(f.content)
	f.file = testutil.NewFile(f.hash, terms, chunkHashes, f.sha)
	return f
}

// shardBytes builds the upload form of a shard with files and xorbs.
func (r *refData) shardBytes(files []*testFile, xorbs ...*testXorb) []byte {
	sh := &shard.Shard{Version: shard.HeaderVersion}
	for _, f := range files {
		sh.Files = append(sh.Files, f.file)
	}
	for _, x := range xorbs {
		sh.Xorbs = append(sh.Xorbs, r.shardXorb(x))
	}
	sh.Sort()
	return sh.AppendUpload(nil)
}

func rawShard(files []shard.File, xorbs []shard.Xorb) []byte {
	sh := &shard.Shard{Version: shard.HeaderVersion, Files: files, Xorbs: xorbs}
	return sh.AppendUpload(nil)
}

// fetchPlan downloads what plan describes the way a client does: read each fetch range of the stored
// xorb, decode its records, cut them by the terms, skip offset_into_first_range, and keep want bytes.
func fetchPlan(ctx context.Context, s *Store, plan *casapi.ReconstructionV2, want uint64) ([]byte, error) {
	chunks := map[hash.Hash]map[uint32][]byte{}
	for x, fetches := range plan.Xorbs {
		f, recordsLen, err := s.OpenXorb(ctx, x)
		if err != nil {
			return nil, err
		}
		m := map[uint32][]byte{}
		for _, fe := range fetches {
			if fe.URL != "" {
				f.Close()
				return nil, fmt.Errorf("xorb %s: URL %q should be empty", x, fe.URL)
			}
			for _, rg := range fe.Ranges {
				if rg.Bytes.End >= uint64(recordsLen) {
					f.Close()
					return nil, fmt.Errorf("xorb %s: range %v beyond records (%d)", x, rg.Bytes, recordsLen)
				}
				buf := make([]byte, rg.Bytes.Len())
				if _, err := f.ReadAt(buf, int64(rg.Bytes.Start)); err != nil && err != io.EOF {
					f.Close()
					return nil, err
				}
				n := 0
				if err := testutil.DecodeRecords(buf, func(i int, raw []byte) error {
					m[rg.Chunks.Start+uint32(i)] = bytes.Clone(raw)
					n++
					return nil
				}); err != nil {
					f.Close()
					return nil, err
				}
				if n != int(rg.Chunks.End-rg.Chunks.Start) {
					f.Close()
					return nil, fmt.Errorf("xorb %s range %v: %d chunks decoded, want %d", x, rg.Chunks, n, rg.Chunks.End-rg.Chunks.Start)
				}
			}
		}
		f.Close()
		chunks[x] = m
	}
	var out []byte
	for i, t := range plan.Terms {
		var term []byte
		for c := t.Range.Start; c < t.Range.End; c++ {
			raw, ok := chunks[t.Hash][c]
			if !ok {
				return nil, fmt.Errorf("term %d: chunk %d of xorb %s not fetched", i, c, t.Hash)
			}
			term = append(term, raw...)
		}
		if uint32(len(term)) != t.UnpackedLength {
			return nil, fmt.Errorf("term %d: %d bytes, unpacked_length %d", i, len(term), t.UnpackedLength)
		}
		if i == 0 {
			if plan.OffsetIntoFirstRange >= uint64(len(term)) {
				return nil, fmt.Errorf("offset_into_first_range %d beyond first term (%d)", plan.OffsetIntoFirstRange, len(term))
			}
			term = term[plan.OffsetIntoFirstRange:]
		}
		out = append(out, term...)
	}
	if uint64(len(out)) < want {
		return nil, fmt.Errorf("plan gives %d bytes, want %d", len(out), want)
	}
	return out[:want], nil
}

// readFile reconstructs a file (or a range) through Reconstruct and fetchPlan.
func readFile(ctx context.Context, s *Store, file hash.Hash, rng *casapi.ByteRange) ([]byte, error) {
	size, err := s.FileSize(ctx, file)
	if err != nil {
		return nil, err
	}
	plan, err := s.Reconstruct(ctx, file, rng)
	if err != nil {
		return nil, err
	}
	want := size
	if rng != nil {
		want = min(rng.End, size-1) - rng.Start + 1
	}
	return fetchPlan(ctx, s, plan, want)
}

func openStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustPutXorb(t testing.TB, s *Store, x *testXorb) bool {
	t.Helper()
	ins, err := s.PutXorb(context.Background(), x.hash, bytes.NewReader(x.body))
	if err != nil {
		t.Fatalf("PutXorb %s: %v", x.hash, err)
	}
	return ins
}
