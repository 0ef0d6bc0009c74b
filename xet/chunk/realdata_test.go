package chunk_test

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// The first 10 records of the reference xorb decompress to the first 810,234 bytes of the reference
// CSV. Re-chunking them must give the reference .chunks list: lengths and hashes of xet-core.
func TestRealData(t *testing.T) {
	var csv []byte
	err := testutil.DecodeRecords(vectors.ReadFile(t, "ev-population.xorb.first-10-chunks"), func(i int, raw []byte) error {
		csv = append(csv, raw...)
		return nil
	})
	if err != nil {
		t.Fatalf("decoding the reference records: %v", err)
	}
	if len(csv) != 810234 {
		t.Fatalf("reference records decode to %d bytes, want 810234", len(csv))
	}
	ref := vectors.ReferenceChunks(t)[:10]

	// The REAL-DATA check of xet-vectors.txt (a comment there): the cumulative boundaries.
	want := realDataBoundaries(t)
	end := 0
	for i, c := range ref {
		end += int(c.Size)
		if i >= len(want) || want[i] != end {
			t.Fatalf(".chunks line %d ends at %d; the REAL-DATA vector says %v", i+1, end, want)
		}
	}
	if len(want) != len(ref) {
		t.Fatalf("REAL-DATA vector has %d boundaries, want %d", len(want), len(ref))
	}
	if got := chunk.Boundaries(csv); !slices.Equal(got, want) {
		t.Errorf("Boundaries = %v, want %v", got, want)
	}

	// Streaming, in reads of varying sizes, with SHA-256 beside.
	s, err := chunk.Summarize(iotest.HalfReader(bytes.NewReader(csv)))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Chunks) != len(ref) {
		t.Fatalf("%d chunks, want %d", len(s.Chunks), len(ref))
	}
	for i, c := range s.Chunks {
		if c.Hash.String() != ref[i].Hash || c.Size != ref[i].Size {
			t.Errorf("chunk %d: %s %d, reference %s %d", i, c.Hash, c.Size, ref[i].Hash, ref[i].Size)
		}
	}
	if s.Size != int64(len(csv)) || s.SHA256 != sha256.Sum256(csv) {
		t.Errorf("summary size %d sha256 %x", s.Size, s.SHA256)
	}
	if s.FileHash != hash.File(s.Chunks) {
		t.Error("summary file hash is not the file hash of its chunks")
	}
}

// realDataBoundaries reads the "chunking that buffer must give: ..." line under "## REAL-DATA".
func realDataBoundaries(t *testing.T) []int {
	text := string(vectors.ReadFile(t, "xet-vectors.txt"))
	_, after, ok := strings.Cut(text, "## REAL-DATA")
	if !ok {
		t.Fatal("xet-vectors.txt has no REAL-DATA section")
	}
	_, after, ok = strings.Cut(after, "must give:")
	if !ok {
		t.Fatal("REAL-DATA section has no boundaries")
	}
	line, _, _ := strings.Cut(after, "\n")
	line, _, _ = strings.Cut(line, "(")
	return vectors.Ints(t, strings.Fields(line))
}
