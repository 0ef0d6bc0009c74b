package shard

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
)

// localBytes is a small local-form shard with lookups, and offsets of interesting entries in it.
func localBytes(t testing.TB) (b []byte, s *Shard) {
	t.Helper()
	s = testShard()
	s.Sort()
	return s.AppendLocal(nil, 10, 20), s
}

func put32(b []byte, off int, v uint32) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(c[off:], v)
	return c
}

func put64(b []byte, off int, v uint64) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint64(c[off:], v)
	return c
}

func TestParseHostile(t *testing.T) {
	loc, s := localBytes(t)
	up := s.AppendUpload(nil)
	foot := len(loc) - FooterSize
	ft := mustParse(t, loc).Footer
	xorbAt := int(ft.XorbInfoOffset)
	firstFile := HeaderSize
	ref := vectors.ReadFile(t, refVerification)

	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "too short for a header"},
		{"header only", up[:HeaderSize], "file section entry 0: data ends"},
		{"bad tag", append([]byte("HFRepoMetaDatX"), up[14:]...), "bad header tag"},
		{"version 3", put64(up, 32, 3), "header version 3"},
		{"footer_size 100", put64(up, 40, 100), "footer_size 100"},
		{"footer_size 200 without footer", put64(up, 40, 200), ""},
		{"huge file num_entries", put32(up, firstFile+36, 0xFFFFFFFF), "shard: file section entry 0: num_entries 4294967295 exceeds remaining data"},
		{"huge file num_entries in reference", put32(ref, HeaderSize+36, 0xFFFFFFFF), "file section entry 0: num_entries 4294967295 exceeds remaining data"},
		{"huge xorb num_entries", put32(loc, xorbAt+36, 0x7FFFFFFF), "xorb section entry 0: num_entries 2147483647 exceeds remaining data"},
		{"empty term range", put32(up, firstFile+EntrySize+44, 0), "is empty"},
		{"truncated upload", up[:len(up)-10], "before the bookend"},
		{"no xorb bookend", up[:len(up)-EntrySize], "xorb section entry"},
		{"trailing bytes", append(append([]byte(nil), up...), 1, 2, 3), "3 bytes after the xorb section bookend"},
		{"footer version", put64(loc, foot, 2), "footer version 2"},
		{"footer offset", put64(loc, foot+192, 5), "footer_offset 5"},
		{"file info offset", put64(loc, foot+8, 96), "file_info_offset 96"},
		{"xorb info offset", put64(loc, foot+16, 1<<40), "xorb_info_offset"},
		{"file lookup offset", put64(loc, foot+24, 0), "file_lookup_offset 0"},
		{"file lookup num huge", put64(loc, foot+32, 1<<62), "file_lookup_num_entry 4611686018427387904 exceeds remaining data"},
		{"xorb lookup offset", put64(loc, foot+40, ft.XorbLookupOffset+12), "xorb_lookup_offset"},
		{"xorb lookup num huge", put64(loc, foot+48, 1<<63), "xorb_lookup_num_entry"},
		{"chunk lookup num huge", put64(loc, foot+64, ^uint64(0)), "chunk_lookup_num_entry"},
		{"chunk lookup short", put64(loc, foot+64, ft.ChunkLookupNum-1), "bytes between the chunk lookup and the footer"},
		{"file lookup index", put32(loc, int(ft.FileLookupOffset)+8, 1), "file lookup entry 0: index 1 is not a file header"},
		{"file lookup key", put64(loc, int(ft.FileLookupOffset), 0), "file lookup entry 0: key"},
		{"xorb lookup index", put32(loc, int(ft.XorbLookupOffset)+8, 0xFFFFFFFF), "xorb lookup entry 0: index 4294967295"},
		{"chunk lookup xorb index", put32(loc, int(ft.ChunkLookupOffset)+8, 3), "chunk lookup entry 0: index 3 is not a xorb header"},
		{"chunk lookup chunk index", put32(loc, int(ft.ChunkLookupOffset)+12, 99), "chunk 99 beyond"},
		{"chunk lookup unsorted", put64(loc, int(ft.ChunkLookupOffset), ^uint64(0)), "chunk lookup entry 1: not sorted"},
		{"header and footer only", append(put64(up[:HeaderSize], 40, FooterSize), loc[foot:]...), "footer_offset"},
		{"short footer", append(put64(up[:HeaderSize], 40, FooterSize), loc[foot:foot+100]...), "too short for a header and a 200-byte footer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("accepted: %d files %d xorbs", len(s.Files), len(s.Xorbs))
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "shard: ") {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestParseEveryTruncation: no prefix of a valid shard parses or panics, except the whole.
func TestParseEveryTruncation(t *testing.T) {
	loc, s := localBytes(t)
	for _, b := range [][]byte{loc, s.AppendUpload(nil)} {
		for n := 0; n < len(b); n++ {
			if _, err := Parse(b[:n]); err == nil {
				t.Fatalf("prefix of %d/%d bytes accepted", n, len(b))
			}
		}
	}
}

func TestValidate(t *testing.T) {
	for _, name := range refNames {
		s := mustParse(t, vectors.ReadFile(t, name))
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		err := s.CheckUpload()
		if ok := name == refVerification || name == refNoFooter; ok != (err == nil) {
			t.Errorf("%s: CheckUpload = %v", name, err)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(s *Shard)
		want   string
	}{
		{"raw start", func(s *Shard) { s.Xorbs[0].Chunks[3].RawStart++ }, "chunk 3: raw start"},
		{"bytes in xorb", func(s *Shard) { s.Xorbs[1].BytesInXorb-- }, "num_bytes_in_xorb"},
		{"verification count", func(s *Shard) { s.Files[1].Verification = s.Files[1].Verification[:1] }, "1 verification entries for 2 terms"},
		{"empty term", func(s *Shard) { s.Files[1].Terms[0].ChunkEnd = 0 }, "is empty"},
	} {
		s := testShard()
		tc.change(s)
		if err := s.Validate(); err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.want)
		}
	}
	s := testShard() // files[0] has no verification entries
	if err := s.CheckUpload(); err == nil || !strings.Contains(err.Error(), "no verification entries") {
		t.Errorf("CheckUpload = %v", err)
	}
	s.Files = s.Files[1:]
	if err := s.CheckUpload(); err != nil {
		t.Errorf("CheckUpload of NewFile files: %v", err)
	}
	s.Files[0].HasSHA256 = false
	if err := s.CheckUpload(); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("CheckUpload = %v", err)
	}
}
