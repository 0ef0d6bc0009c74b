package shard

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash/hashtest"
)

const (
	refShard        = "ev-population.csv.shard"
	refVerification = "ev-population.csv.shard.verification"
	refNoFooter     = "ev-population.csv.shard.verification-no-footer"
	refDedupe       = "ev-population.csv.shard.dedupe"

	refXorbHash = "eea25d6ee393ccae385820daed127b96ef0ea034dfb7cf6da3a950ce334b7632"
	refFileHash = "118a53328412787fee04011dcf82fdc4acf3a4a1eddec341c910d30a306aaf97"
	refRange    = "d81c11b1fc9bc2a25587108c675bbfe65ca2e5d350b0cd92c58329fcc8444178"
	refSHA256   = "f41255b252f776125f2b657136654e4d4d5d2ccf8ef4db0ec186bd1981b69734"
	refCSVSize  = 63527244
	refChunks   = 796
)

var refNames = []string{refShard, refVerification, refNoFooter, refDedupe}

func mustParse(t testing.TB, b []byte) *Shard {
	t.Helper()
	s, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

// refChunkList returns the CSV's chunks from ev-population.csv.chunks.
func refChunkList(t testing.TB) ([]hash.Hash, []hash.Entry) {
	t.Helper()
	lines := vectors.ReferenceChunks(t)
	hs := make([]hash.Hash, len(lines))
	es := make([]hash.Entry, len(lines))
	for i, l := range lines {
		hs[i] = hashtest.MustParse(l.Hash)
		es[i] = hash.Entry{Hash: hs[i], Size: l.Size}
	}
	return hs, es
}

func TestReferenceRoundTrip(t *testing.T) {
	for _, name := range refNames {
		t.Run(name, func(t *testing.T) {
			b := vectors.ReadFile(t, name)
			s := mustParse(t, b)
			if got := s.Marshal(); !bytes.Equal(got, b) {
				t.Fatalf("Marshal differs from the input (%d vs %d bytes), first difference at %d", len(got), len(b), firstDiff(got, b))
			}
			again := mustParse(t, s.Marshal())
			if !reflect.DeepEqual(again, s) {
				t.Fatalf("Parse(Marshal(s)) differs from s")
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestReferenceUploadForm(t *testing.T) {
	s := mustParse(t, vectors.ReadFile(t, refVerification))
	s.Sort()
	want := vectors.ReadFile(t, refNoFooter)
	got := s.AppendUpload(nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("upload form differs from %s (%d vs %d bytes), first difference at %d", refNoFooter, len(got), len(want), firstDiff(got, want))
	}
	// Appending keeps what dst already holds.
	prefix := []byte("prefix")
	if got := s.AppendUpload(prefix); !bytes.Equal(got[:6], prefix) || !bytes.Equal(got[6:], want) {
		t.Fatal("AppendUpload to a non-empty dst")
	}

	nf := mustParse(t, want)
	if nf.Footer != nil || nf.Keyed() {
		t.Fatalf("no-footer shard parsed with footer %+v", nf.Footer)
	}
	if !reflect.DeepEqual(nf.Files, s.Files) || !reflect.DeepEqual(nf.Xorbs, s.Xorbs) {
		t.Fatal("no-footer form holds different files or xorbs than the form with footer")
	}
}

// TestReferenceFields checks what the README says the reference shards hold.
func TestReferenceFields(t *testing.T) {
	_, entries := refChunkList(t)
	for _, tc := range []struct {
		name           string
		flags          uint32
		verification   bool
		footer         bool
		created, expir uint64
	}{
		{refShard, FlagMetadataExt, false, true, 1758141909, 0},
		{refVerification, FlagMetadataExt | FlagVerification, true, true, 0, 1760478341},
		{refNoFooter, FlagMetadataExt | FlagVerification, true, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, vectors.ReadFile(t, tc.name))
			if s.Version != 2 || len(s.Files) != 1 || len(s.Xorbs) != 1 {
				t.Fatalf("version %d, %d files, %d xorbs; want 2, 1, 1", s.Version, len(s.Files), len(s.Xorbs))
			}
			f := s.Files[0]
			if f.Hash.String() != refFileHash {
				t.Errorf("file hash %s, want %s", f.Hash, refFileHash)
			}
			if f.Flags != tc.flags {
				t.Errorf("flags %#x, want %#x", f.Flags, tc.flags)
			}
			if len(f.Terms) != 1 {
				t.Fatalf("%d terms, want 1", len(f.Terms))
			}
			term := f.Terms[0]
			if term.Xorb.String() != refXorbHash || term.ChunkStart != 0 || term.ChunkEnd != refChunks || term.UnpackedBytes != refCSVSize {
				t.Errorf("term %+v, want xorb %s chunks [0,%d) %d bytes", term, refXorbHash, refChunks, refCSVSize)
			}
			if f.Size() != refCSVSize {
				t.Errorf("file size %d", f.Size())
			}
			if tc.verification {
				if len(f.Verification) != 1 || f.Verification[0].String() != refRange {
					t.Errorf("verification %v, want [%s]", f.Verification, refRange)
				}
			} else if f.Verification != nil {
				t.Errorf("verification entries %v in a shard without the flag", f.Verification)
			}
			if !f.HasSHA256 || f.SHA256.String() != refSHA256 {
				t.Errorf("sha256 ext %v %s, want %s", f.HasSHA256, f.SHA256, refSHA256)
			}
			if raw := f.SHA256[:4]; !bytes.Equal(raw, []byte{0x12, 0x76, 0xf7, 0x52}) {
				t.Errorf("sha256 raw bytes start %x, want 1276f752 (8-byte groups reversed)", raw)
			}

			x := s.Xorbs[0]
			if x.Hash.String() != refXorbHash || len(x.Chunks) != refChunks || x.BytesInXorb != refCSVSize || x.BytesOnDisk != 0 || x.Flags != 0 {
				t.Errorf("xorb %s flags %d, %d chunks, %d bytes, %d on disk", x.Hash, x.Flags, len(x.Chunks), x.BytesInXorb, x.BytesOnDisk)
			}
			var start uint32
			for i, c := range x.Chunks {
				if c.Hash != entries[i].Hash || uint64(c.RawLen) != entries[i].Size || c.RawStart != start || c.Flags != 0 {
					t.Fatalf("chunk %d = %+v, want %s len %d at %d", i, c, entries[i].Hash, entries[i].Size, start)
				}
				start += c.RawLen
			}
			if got := hash.Merkle(entries); got != x.Hash {
				t.Errorf("xorb hash of the chunk list %s != %s", got, x.Hash)
			}

			if !tc.footer {
				if s.Footer != nil {
					t.Fatal("footer in the no-footer form")
				}
				return
			}
			ft := s.Footer
			if ft.CreatedAt != tc.created || ft.ExpiresAt != tc.expir {
				t.Errorf("created %d expires %d, want %d %d", ft.CreatedAt, ft.ExpiresAt, tc.created, tc.expir)
			}
			size := uint64(len(vectors.ReadFile(t, tc.name)))
			if ft.Version != 1 || ft.FileInfoOffset != 48 || ft.FooterOffset != size-FooterSize ||
				ft.FileLookupNum != 0 || ft.XorbLookupNum != 0 || ft.ChunkLookupNum != 0 ||
				ft.FileLookupOffset != ft.FooterOffset || ft.ChunkLookupOffset != ft.FooterOffset ||
				ft.XorbInfoOffset != 48+uint64(f.entries()+1)*EntrySize {
				t.Errorf("footer layout %+v", ft)
			}
			if ft.StoredBytes != refCSVSize || ft.MaterializedBytes != refCSVSize || ft.StoredBytesOnDisk != 0 || !ft.HMACKey.IsZero() || s.Keyed() {
				t.Errorf("footer totals/key %+v", ft)
			}
		})
	}
}

// TestReferenceDedupe checks the keyed global-dedupe answer: every chunk entry is the keyed form of
// the CSV's chunk, and FindChunk finds every chunk by its plain hash.
func TestReferenceDedupe(t *testing.T) {
	s := mustParse(t, vectors.ReadFile(t, refDedupe))
	if !s.Keyed() || len(s.Files) != 0 || len(s.Xorbs) != 1 {
		t.Fatalf("keyed %v, %d files, %d xorbs; want keyed, 0, 1", s.Keyed(), len(s.Files), len(s.Xorbs))
	}
	ft := s.Footer
	if ft.CreatedAt != 1758663941 || ft.ExpiresAt != 1760478341 {
		t.Errorf("created %d expires %d", ft.CreatedAt, ft.ExpiresAt)
	}
	if raw := ft.HMACKey[:4]; !bytes.Equal(raw, []byte{0x78, 0x56, 0x34, 0x12}) || ft.HMACKey.String()[:8] != "12345678" {
		t.Errorf("key %x (%s)", ft.HMACKey[:], ft.HMACKey)
	}
	if ft.XorbInfoOffset != 96 {
		t.Errorf("xorb_info_offset %d, want 96", ft.XorbInfoOffset)
	}
	hs, _ := refChunkList(t)
	x := s.Xorbs[0]
	if x.Hash.String() != refXorbHash || len(x.Chunks) != len(hs) {
		t.Fatalf("xorb %s with %d chunks", x.Hash, len(x.Chunks))
	}
	matched := 0
	for i, c := range x.Chunks {
		if c.Hash == hash.Keyed(ft.HMACKey, hs[i]) {
			matched++
		}
		if c.Hash == hs[i] {
			t.Fatalf("chunk %d is stored unkeyed", i)
		}
	}
	if matched != refChunks {
		t.Fatalf("%d/%d keyed entries match", matched, refChunks)
	}
	for i, h := range hs {
		xi, ci, ok := s.FindChunk(h)
		// The CSV repeats no chunk, so the first match is chunk i.
		if !ok || xi != 0 || ci != i {
			t.Fatalf("FindChunk(chunk %d) = %d, %d, %v", i, xi, ci, ok)
		}
	}
	if _, _, ok := s.FindChunk(hash.Keyed(ft.HMACKey, hs[0])); ok {
		t.Fatal("FindChunk matched an already keyed hash")
	}
}

// TestNewFileReference builds the reference upload shard from the chunk list alone, as an uploader
// would, and gets the reference bytes.
func TestNewFileReference(t *testing.T) {
	hs, entries := refChunkList(t)
	ref := mustParse(t, vectors.ReadFile(t, refNoFooter))
	xorbHash := hash.Merkle(entries)
	x := Xorb{Hash: xorbHash}
	var total uint32
	for _, e := range entries {
		x.Chunks = append(x.Chunks, XorbChunk{Hash: e.Hash, RawStart: total, RawLen: uint32(e.Size)})
		total += uint32(e.Size)
	}
	x.BytesInXorb = total
	fileHash := hash.File(entries)
	if fileHash.String() != refFileHash {
		t.Fatalf("file hash %s", fileHash)
	}
	terms := []Term{{Xorb: xorbHash, UnpackedBytes: total, ChunkStart: 0, ChunkEnd: uint32(len(hs))}}
	f := NewFile(fileHash, terms, hs, hashtest.MustParse(refSHA256).SHA256())
	if !reflect.DeepEqual(f, ref.Files[0]) {
		t.Fatalf("NewFile = %+v\nwant %+v", f, ref.Files[0])
	}
	// Two files with the same hash collapse, xorbs too.
	s := &Shard{Files: []File{f, f}, Xorbs: []Xorb{x, x}}
	s.Sort()
	if got, want := s.AppendUpload(nil), vectors.ReadFile(t, refNoFooter); !bytes.Equal(got, want) {
		t.Fatalf("built upload shard differs from the reference at byte %d", firstDiff(got, want))
	}
}

func TestBuildFileMismatch(t *testing.T) {
	hs := []hash.Hash{{1}, {2}, {3}}
	for _, tc := range []struct {
		name  string
		terms []Term
	}{
		{"too few chunks", []Term{{ChunkStart: 0, ChunkEnd: 4}}},
		{"too many chunks", []Term{{ChunkStart: 0, ChunkEnd: 2}}},
		{"empty range", []Term{{ChunkStart: 2, ChunkEnd: 2}, {ChunkStart: 0, ChunkEnd: 3}}},
	} {
		if _, err := BuildFile(hash.Hash{9}, tc.terms, hs, [32]byte{}); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	f, err := BuildFile(hash.Hash{9}, []Term{{ChunkStart: 5, ChunkEnd: 7}, {ChunkStart: 0, ChunkEnd: 1}}, hs, [32]byte{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Verification[0] != hash.Verification(hs[:2]) || f.Verification[1] != hash.Verification(hs[2:]) {
		t.Fatal("verification entries are not over the file's own chunks in order")
	}
}

// testShard builds a shard with several files and xorbs in no particular order, including a file
// listed twice and a chunk present in two xorbs.
func testShard() *Shard {
	mk := func(seed byte, n int) Xorb {
		x := Xorb{}
		var start uint32
		for i := 0; i < n; i++ {
			h := hash.Chunk([]byte{seed, byte(i)})
			x.Chunks = append(x.Chunks, XorbChunk{Hash: h, RawStart: start, RawLen: uint32(1000 + i)})
			start += uint32(1000 + i)
		}
		x.BytesInXorb = start
		x.BytesOnDisk = start / 2
		es := make([]hash.Entry, n)
		for i, c := range x.Chunks {
			es[i] = hash.Entry{Hash: c.Hash, Size: uint64(c.RawLen)}
		}
		x.Hash = hash.Merkle(es)
		return x
	}
	xs := []Xorb{mk(1, 5), mk(2, 3), mk(3, 7), mk(4, 1)}
	xs[2].Chunks[4].Hash = xs[0].Chunks[1].Hash // shared chunk
	var files []File
	for i, x := range xs {
		n := len(x.Chunks)
		hs := make([]hash.Hash, n)
		for j, c := range x.Chunks {
			hs[j] = c.Hash
		}
		terms := []Term{{Xorb: x.Hash, UnpackedBytes: x.Chunks[0].RawLen, ChunkStart: 0, ChunkEnd: 1}}
		if n > 1 {
			terms = append(terms, Term{Xorb: x.Hash, UnpackedBytes: x.BytesInXorb - x.Chunks[0].RawLen, ChunkStart: 1, ChunkEnd: uint32(n)})
		}
		files = append(files, NewFile(hash.Chunk([]byte{'f', byte(i)}), terms, hs, [32]byte{byte(i)}))
	}
	files = append(files, files[1])
	files[0].Verification = nil // a file without verification entries
	files[0].Flags &^= FlagVerification
	return &Shard{Files: files, Xorbs: xs}
}

func TestSort(t *testing.T) {
	s := testShard()
	s.Sort()
	if len(s.Files) != 4 || len(s.Xorbs) != 4 {
		t.Fatalf("%d files %d xorbs after Sort, want 4 and 4", len(s.Files), len(s.Xorbs))
	}
	for i := 1; i < len(s.Files); i++ {
		if s.Files[i-1].Hash.Compare(s.Files[i].Hash) >= 0 {
			t.Fatalf("files not sorted at %d", i)
		}
	}
	for i := 1; i < len(s.Xorbs); i++ {
		if s.Xorbs[i-1].Hash.Compare(s.Xorbs[i].Hash) >= 0 {
			t.Fatalf("xorbs not sorted at %d", i)
		}
	}
}

func TestAppendLocalRoundTrip(t *testing.T) {
	s := testShard()
	s.Sort()
	b := s.AppendLocal(nil, 1700000000, 1700000000+21*86400)
	p := mustParse(t, b)
	if !reflect.DeepEqual(p.Files, s.Files) || !reflect.DeepEqual(p.Xorbs, s.Xorbs) {
		t.Fatal("AppendLocal -> Parse changed files or xorbs")
	}
	if !bytes.Equal(p.Marshal(), b) {
		t.Fatal("Marshal of the parsed local shard differs")
	}
	f := p.Footer
	var mat, stored, disk uint64
	for _, fi := range s.Files {
		for _, tm := range fi.Terms {
			mat += uint64(tm.UnpackedBytes)
		}
	}
	for _, x := range s.Xorbs {
		stored += uint64(x.BytesInXorb)
		disk += uint64(x.BytesOnDisk)
	}
	if f.CreatedAt != 1700000000 || f.ExpiresAt != 1700000000+21*86400 || !f.HMACKey.IsZero() ||
		f.MaterializedBytes != mat || f.StoredBytes != stored || f.StoredBytesOnDisk != disk ||
		f.FooterOffset != uint64(len(b)-FooterSize) || f.Version != 1 {
		t.Fatalf("footer %+v", f)
	}
	if len(p.FileLookup) != 4 || len(p.XorbLookup) != 4 || len(p.ChunkLookup) != 16 {
		t.Fatalf("lookups %d %d %d, want 4 4 16", len(p.FileLookup), len(p.XorbLookup), len(p.ChunkLookup))
	}
	// Each lookup entry addresses, in the serialized bytes, the header or chunk entry whose
	// truncated hash it holds.
	for _, e := range p.FileLookup {
		off := f.FileInfoOffset + uint64(e.Index)*EntrySize
		if got := hash.Hash(b[off : off+32]).Truncate(); got != e.Key {
			t.Fatalf("file lookup %+v points at an entry with key %x", e, got)
		}
		i, ok := p.FindFile(hash.Hash(b[off : off+32]))
		if !ok || p.FileEntryIndex(i) != e.Index {
			t.Fatalf("file lookup %+v: not a file header", e)
		}
	}
	for i, x := range p.Xorbs {
		found := false
		for _, e := range p.XorbLookup {
			if e.Key == x.Hash.Truncate() && e.Index == p.XorbEntryIndex(i) {
				found = true
			}
		}
		if !found {
			t.Fatalf("xorb %d has no lookup entry", i)
		}
	}
	for _, e := range p.ChunkLookup {
		off := f.XorbInfoOffset + uint64(e.XorbIndex)*EntrySize
		hdr := hash.Hash(b[off : off+32])
		xi, ok := p.FindXorb(hdr)
		if !ok {
			t.Fatalf("chunk lookup %+v: no xorb header at its index", e)
		}
		coff := off + uint64(1+e.ChunkIndex)*EntrySize
		if hash.Hash(b[coff:coff+32]) != p.Xorbs[xi].Chunks[e.ChunkIndex].Hash || p.Xorbs[xi].Chunks[e.ChunkIndex].Hash.Truncate() != e.Key {
			t.Fatalf("chunk lookup %+v does not point at its chunk", e)
		}
	}
	for _, l := range [][]LookupEntry{p.FileLookup, p.XorbLookup} {
		for i := 1; i < len(l); i++ {
			if l[i-1].Key > l[i].Key {
				t.Fatal("lookup not ascending")
			}
		}
	}
	// Every chunk is found through the lookup table, and the shared chunk resolves to a xorb
	// holding it.
	for xi, x := range p.Xorbs {
		for ci, c := range x.Chunks {
			gx, gc, ok := p.FindChunk(c.Hash)
			if !ok || p.Xorbs[gx].Chunks[gc].Hash != c.Hash {
				t.Fatalf("FindChunk(xorb %d chunk %d) = %d %d %v", xi, ci, gx, gc, ok)
			}
		}
	}
	if _, _, ok := p.FindChunk(hash.Hash{0xAB}); ok {
		t.Fatal("FindChunk found an absent chunk")
	}
	// The upload form of the parsed local shard drops lookups and footer.
	up := mustParse(t, p.AppendUpload(nil))
	if up.Footer != nil || up.FileLookup != nil || !reflect.DeepEqual(up.Files, s.Files) {
		t.Fatal("upload form of a local shard")
	}
}

func TestEmptyShard(t *testing.T) {
	s := &Shard{}
	up := s.AppendUpload(nil)
	if len(up) != HeaderSize+2*EntrySize {
		t.Fatalf("empty upload shard is %d bytes", len(up))
	}
	p := mustParse(t, up)
	if len(p.Files) != 0 || len(p.Xorbs) != 0 || p.Footer != nil {
		t.Fatal("empty shard parsed with content")
	}
	loc := mustParse(t, s.AppendLocal(nil, 1, 2))
	if loc.Footer == nil || loc.Footer.CreatedAt != 1 || loc.Footer.ExpiresAt != 2 {
		t.Fatal("empty local shard footer")
	}
	if !errors.Is(func() error { _, err := Parse(up[:len(up)-1]); return err }(), ErrInvalid) {
		t.Fatal("truncated empty shard accepted")
	}
}
