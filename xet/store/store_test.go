package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash/hashtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

func TestReferenceXorbRoundTrip(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	s := openStore(t)
	x := r.xorb(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	if !bytes.Equal(x.body, r.records) {
		t.Fatal("fixture: all ten records should be the reference file")
	}
	if ok, _ := s.HasXorb(ctx, x.hash); ok {
		t.Fatal("HasXorb before PutXorb")
	}
	if !mustPutXorb(t, s, x) {
		t.Fatal("first PutXorb: inserted=false")
	}
	if mustPutXorb(t, s, x) {
		t.Fatal("second PutXorb: inserted=true, want false")
	}
	if ok, err := s.HasXorb(ctx, x.hash); !ok || err != nil {
		t.Fatalf("HasXorb = %v, %v", ok, err)
	}

	f, recordsLen, err := s.OpenXorb(ctx, x.hash)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if recordsLen != int64(len(r.records)) {
		t.Fatalf("recordsLen = %d, want %d", recordsLen, len(r.records))
	}
	obj, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<30))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(obj[:recordsLen], r.records) {
		t.Fatal("stored records differ from the upload")
	}
	foot, start, err := xorb.ParseFooter(obj)
	if err != nil {
		t.Fatalf("stored object footer: %v", err)
	}
	if start != len(r.records) || foot.Hash != x.hash || foot.Version != 1 || !reflect.DeepEqual(foot.ChunkHashes, r.hashes) {
		t.Fatalf("stored footer: start %d version %d hash %s", start, foot.Version, foot.Hash)
	}
	if _, _, err := s.OpenXorb(ctx, hash.Chunk([]byte("nope"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("OpenXorb of a missing xorb: %v, want ErrNotFound", err)
	}
}

// TestReferenceFile registers the 810,234-byte CSV prefix and reads it back whole and by ranges.
func TestReferenceFile(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	s := openStore(t)
	x := r.xorb(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	mustPutXorb(t, s, x)
	f := r.file(seg{x, 0, 10})
	if !bytes.Equal(f.content, r.prefix) {
		t.Fatal("fixture: file content should be the decoded prefix")
	}
	body := r.shardBytes([]*testFile{f}, x)
	existed, err := s.PutShard(ctx, "", body)
	if err != nil || existed {
		t.Fatalf("PutShard = %v, %v; want false, nil", existed, err)
	}
	if existed, err := s.PutShard(ctx, "", body); err != nil || !existed {
		t.Fatalf("second PutShard = %v, %v; want true, nil", existed, err)
	}
	got, size, err := s.LookupSHA256(ctx, "", hash.FromSHA256(f.sha))
	if err != nil || got != f.hash || size != 810234 {
		t.Fatalf("LookupSHA256 = %s, %d, %v", got, size, err)
	}
	if _, _, err := s.LookupSHA256(ctx, "other/repo", hash.FromSHA256(f.sha)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LookupSHA256 in another namespace: %v, want ErrNotFound", err)
	}
	if n, err := s.FileSize(ctx, f.hash); err != nil || n != 810234 {
		t.Fatalf("FileSize = %d, %v", n, err)
	}

	plan, err := s.Reconstruct(ctx, f.hash, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &casapi.ReconstructionV2{
		Terms: []casapi.Term{{Hash: x.hash, UnpackedLength: 810234, Range: casapi.ChunkRange{Start: 0, End: 10}}},
		Xorbs: map[hash.Hash][]casapi.XorbFetch{x.hash: {{Ranges: []casapi.XorbRange{{
			Chunks: casapi.ChunkRange{Start: 0, End: 10},
			Bytes:  casapi.ByteRange{Start: 0, End: uint64(len(r.records) - 1)},
		}}}}},
	}
	if !reflect.DeepEqual(plan, want) {
		t.Fatalf("whole plan:\n%+v\nwant\n%+v", plan, want)
	}
	data, err := fetchPlan(ctx, s, plan, 810234)
	if err != nil || !bytes.Equal(data, r.prefix) {
		t.Fatalf("whole file: %d bytes, err %v; want the prefix", len(data), err)
	}

	ends := make([]uint64, 10) // raw end of each chunk within the file
	var off uint64
	for i, raw := range r.raws {
		off += uint64(len(raw))
		ends[i] = off
	}
	last := uint64(810233)
	for _, rg := range []casapi.ByteRange{
		{Start: 0, End: 200000},
		{Start: 0, End: 0},
		{Start: 0, End: last},
		{Start: 0, End: last + 1000}, // end past EOF is clamped
		{Start: ends[2], End: ends[5] - 1},
		{Start: ends[2] - 1, End: ends[2]},
		{Start: ends[3] + 17, End: ends[3] + 17},
		{Start: 12345, End: 700000},
		{Start: last, End: last},
		{Start: ends[8], End: last},
		{Start: ends[0] + 1, End: ends[0] + 5},
	} {
		got, err := readFile(ctx, s, f.hash, &rg)
		want := r.prefix[rg.Start : min(rg.End, last)+1]
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("range %d-%d: %d bytes, err %v; want %d bytes of the prefix", rg.Start, rg.End, len(got), err, len(want))
		}
	}
	for _, start := range []uint64{810234, 810235, 1 << 40} {
		if _, err := s.Reconstruct(ctx, f.hash, &casapi.ByteRange{Start: start, End: start + 10}); !errors.Is(err, ErrRangeNotSatisfiable) {
			t.Errorf("range starting at %d: %v, want ErrRangeNotSatisfiable", start, err)
		}
	}
	var inv *InvalidError
	if _, err := s.Reconstruct(ctx, f.hash, &casapi.ByteRange{Start: 10, End: 9}); !errors.As(err, &inv) {
		t.Errorf("range 10-9: %v, want InvalidError", err)
	}
	if _, err := s.Reconstruct(ctx, hash.Chunk([]byte("unknown")), nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown file: %v, want ErrNotFound", err)
	}
}

// TestCapturedRangeResponse compares a range plan with the Hub's answer for the same request
// (Range: bytes=0-200000 on the reference CSV), apart from the signed URL.
func TestCapturedRangeResponse(t *testing.T) {
	ctx := context.Background()
	var hub casapi.ReconstructionV2
	if err := json.Unmarshal(vectors.ReadFile(t, "captured-responses/ev-population-range.v2.json"), &hub); err != nil {
		t.Fatal(err)
	}
	r := loadRef(t)
	s := openStore(t)
	// The Hub's xorb is the whole CSV's; ours holds its first ten chunks, which are byte for byte the
	// first ten records of the Hub's, so chunk and byte offsets of chunks 0..9 agree.
	x := r.xorb(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	mustPutXorb(t, s, x)
	f := r.file(seg{x, 0, 10})
	if _, err := s.PutShard(ctx, "", r.shardBytes([]*testFile{f}, x)); err != nil {
		t.Fatal(err)
	}
	plan, err := s.Reconstruct(ctx, f.hash, &casapi.ByteRange{Start: 0, End: 200000})
	if err != nil {
		t.Fatal(err)
	}
	hubXorb := hashtest.MustParse("eea25d6ee393ccae385820daed127b96ef0ea034dfb7cf6da3a950ce334b7632")
	hubFetch := hub.Xorbs[hubXorb]
	if len(hubFetch) != 1 {
		t.Fatalf("captured response has %d fetches", len(hubFetch))
	}
	hubFetch[0].URL = ""
	hub.Terms[0].Hash = x.hash
	want := &casapi.ReconstructionV2{OffsetIntoFirstRange: hub.OffsetIntoFirstRange, Terms: hub.Terms,
		Xorbs: map[hash.Hash][]casapi.XorbFetch{x.hash: hubFetch}}
	if !reflect.DeepEqual(plan, want) {
		t.Fatalf("plan\n%+v\nwant (the Hub's)\n%+v", plan, want)
	}
}

// TestMultiTermFiles covers files spanning xorbs, repeating chunks and reusing a xorb in several
// terms: plans merge the chunk ranges per xorb, and every range reads back right.
func TestMultiTermFiles(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	s := openStore(t)
	xa, xb := r.xorb(0, 1, 2, 3, 4), r.xorb(5, 6, 7, 8, 9)
	mustPutXorb(t, s, xa)
	mustPutXorb(t, s, xb)
	swapped := r.file(seg{xb, 0, 5}, seg{xa, 0, 5})
	mixed := r.file(seg{xa, 2, 4}, seg{xa, 0, 3}, seg{xb, 1, 2}, seg{xb, 3, 5}, seg{xa, 4, 5})
	single := r.file(seg{xb, 4, 5})
	if _, err := s.PutShard(ctx, "team/repo", r.shardBytes([]*testFile{swapped, mixed, single}, xa, xb)); err != nil {
		t.Fatal(err)
	}
	plan, err := s.Reconstruct(ctx, mixed.hash, nil)
	if err != nil {
		t.Fatal(err)
	}
	chunksOf := func(x hash.Hash) []casapi.ChunkRange {
		var out []casapi.ChunkRange
		for _, fe := range plan.Xorbs[x] {
			for _, rg := range fe.Ranges {
				out = append(out, rg.Chunks)
			}
		}
		return out
	}
	if got := chunksOf(xa.hash); !reflect.DeepEqual(got, []casapi.ChunkRange{{Start: 0, End: 5}}) {
		t.Errorf("xorb A ranges %v, want [0,5) merged from [2,4) [0,3) [4,5)", got)
	}
	if got := chunksOf(xb.hash); !reflect.DeepEqual(got, []casapi.ChunkRange{{Start: 1, End: 2}, {Start: 3, End: 5}}) {
		t.Errorf("xorb B ranges %v, want [1,2) [3,5)", got)
	}
	if len(plan.Terms) != 5 {
		t.Errorf("%d terms, want 5", len(plan.Terms))
	}
	for _, f := range []*testFile{swapped, mixed, single} {
		if got, _, err := s.LookupSHA256(ctx, "team/repo", hash.FromSHA256(f.sha)); err != nil || got != f.hash {
			t.Errorf("LookupSHA256: %s, %v", got, err)
		}
		size := uint64(len(f.content))
		got, err := readFile(ctx, s, f.hash, nil)
		if err != nil || !bytes.Equal(got, f.content) {
			t.Errorf("file %s: whole read %d bytes, %v", f.hash, len(got), err)
		}
		// A sweep of ranges across term and chunk boundaries.
		for start := uint64(0); start < size; start += 37813 {
			for _, n := range []uint64{1, 4096, 70000, 300000, size} {
				rg := casapi.ByteRange{Start: start, End: start + n - 1}
				got, err := readFile(ctx, s, f.hash, &rg)
				want := f.content[start:min(rg.End+1, size)]
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("file %s range %d-%d: %d bytes, %v; want %d", f.hash, rg.Start, rg.End, len(got), err, len(want))
				}
			}
		}
	}
	// Only the terms overlapping a range are returned.
	rg := casapi.ByteRange{Start: uint64(len(swapped.content)) - 10, End: uint64(len(swapped.content)) - 1}
	plan, err = s.Reconstruct(ctx, swapped.hash, &rg)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Terms) != 1 || plan.Terms[0].Hash != xa.hash || plan.Terms[0].Range != (casapi.ChunkRange{Start: 4, End: 5}) || len(plan.Xorbs) != 1 {
		t.Errorf("tail range plan: %+v", plan)
	}
	if plan.OffsetIntoFirstRange != uint64(len(r.raws[4]))-10 {
		t.Errorf("offset_into_first_range = %d, want %d", plan.OffsetIntoFirstRange, len(r.raws[4])-10)
	}
}

func TestEmptyFile(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	s := openStore(t)
	empty := r.file()
	if empty.hash != hash.Zero {
		t.Fatalf("empty file hash %s", empty.hash)
	}
	if _, err := s.PutShard(ctx, "", r.shardBytes([]*testFile{empty})); err != nil {
		t.Fatal(err)
	}
	plan, err := s.Reconstruct(ctx, hash.Zero, nil)
	if err != nil || len(plan.Terms) != 0 || len(plan.Xorbs) != 0 {
		t.Fatalf("empty file plan %+v, %v", plan, err)
	}
	if _, err := s.Reconstruct(ctx, hash.Zero, &casapi.ByteRange{Start: 0, End: 0}); !errors.Is(err, ErrRangeNotSatisfiable) {
		t.Fatalf("range of an empty file: %v, want ErrRangeNotSatisfiable", err)
	}
	if f, n, err := s.LookupSHA256(ctx, "", hash.FromSHA256(empty.sha)); err != nil || f != hash.Zero || n != 0 {
		t.Fatalf("LookupSHA256(empty) = %s %d %v", f, n, err)
	}
}

// TestNamespaces: any namespace string (slashes, dots, very long) maps inside the store and keeps
// its SHA-256 mappings apart from the others'.
func TestNamespaces(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	s := openStore(t)
	x := r.xorb(0, 1)
	mustPutXorb(t, s, x)
	f := r.file(seg{x, 0, 2})
	body := r.shardBytes([]*testFile{f}, x)
	long := strings.Repeat("very-long-org/", 40)
	spaces := []string{"", "../../etc", "org/repo", long, long + "x"}
	for _, want := range []bool{false, true} {
		for _, ns := range spaces {
			// The first time in each namespace the SHA-256 mapping is new, so existed is false.
			if existed, err := s.PutShard(ctx, ns, body); err != nil || existed != want {
				t.Fatalf("PutShard in %q: existed %v, %v; want %v", ns, existed, err, want)
			}
		}
	}
	for _, ns := range spaces {
		if h, _, err := s.LookupSHA256(ctx, ns, hash.FromSHA256(f.sha)); err != nil || h != f.hash {
			t.Errorf("LookupSHA256 in %q: %s, %v", ns, h, err)
		}
	}
	all, err := s.Backend().List(ctx, "ns/")
	var names []string
	for _, n := range all {
		if strings.Contains(n, "/sha256v/") {
			names = append(names, n)
		}
	}
	if err != nil || len(names) != len(spaces) {
		t.Fatalf("ns mappings: %v, %v", names, err)
	}
	if _, _, err := s.LookupSHA256(ctx, "other", hash.FromSHA256(f.sha)); !errors.Is(err, ErrNotFound) {
		t.Errorf("LookupSHA256 in an unused namespace: %v", err)
	}
}
