package xorb

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// lendFile is a file of incompressible and compressible stretches cut into chunks: what an upload
// of a mixed file feeds a Builder.
func lendFile() ([]byte, [][2]int) {
	var file []byte
	var cuts [][2]int
	for i := range 40 {
		var part []byte
		switch i % 3 {
		case 0, 1:
			part = vectors.SplitMix(3000+i*1700, uint64(i))
		default:
			part = csvText(5000+i*900, uint64(i))
		}
		cuts = append(cuts, [2]int{len(file), len(file) + len(part)})
		file = append(file, part...)
	}
	return file, cuts
}

// A Builder that lends the payloads of uncompressed chunks produces the same xorb as one that
// copies them: same hash and chunk offsets, and a serialized body (through Reader in small reads,
// WriteTo, Serialized, or after Own) equal byte for byte.
func TestLentPayloadsSerializeAsCopied(t *testing.T) {
	file, cuts := lendFile()
	ref, lend := NewBuilder(PolicyAuto), NewBuilder(PolicyAuto)
	lend.Lend(bytes.NewReader(file))
	own := NewBuilder(PolicyAuto)
	own.Lend(bytes.NewReader(file))
	for _, c := range cuts {
		data := slices.Clone(file[c[0]:c[1]])
		h := hash.Chunk(data)
		ref.Add(data, h)
		lend.AddFrom(data, h, int64(c[0]))
		own.AddFrom(data, h, int64(c[0]))
	}
	want := ref.Finish()
	if err := own.Own(); err != nil {
		t.Fatal(err)
	}
	owned := own.Finish()
	x := lend.Finish()
	if len(x.Lent) == 0 || len(x.Body) >= len(want.Body)/2 {
		t.Fatalf("%d payloads lent, body %d of %d bytes: the random chunks were copied", len(x.Lent), len(x.Body), len(want.Body))
	}
	if x.Hash != want.Hash || !slices.Equal(x.Chunks, want.Chunks) || x.Size() != len(want.Body) {
		t.Fatalf("lent xorb differs: hash %s/%s, size %d/%d", x.Hash, want.Hash, x.Size(), len(want.Body))
	}
	small, err := io.ReadAll(iotest.OneByteReader(x.Reader()))
	if err != nil || !bytes.Equal(small, want.Body) {
		t.Fatalf("Reader in 1-byte reads: %v, equal %v", err, bytes.Equal(small, want.Body))
	}
	var buf bytes.Buffer
	if _, err := x.Reader().(io.WriterTo).WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), want.Body) {
		t.Fatalf("WriteTo: %v, equal %v", err, bytes.Equal(buf.Bytes(), want.Body))
	}
	if s, err := x.Serialized(); err != nil || !bytes.Equal(s, want.Body) {
		t.Fatalf("Serialized: %v", err)
	}
	if len(owned.Lent) != 0 || owned.Src != nil || !bytes.Equal(owned.Body, want.Body) || !slices.Equal(owned.Chunks, want.Chunks) {
		t.Fatalf("after Own: %d lent, body equal %v", len(owned.Lent), bytes.Equal(owned.Body, want.Body))
	}
	// Index hashes uncompressed payloads where they lie and decodes the others into a scratch
	// buffer: a mixed body indexes to the builder's own chunk list.
	info, err := Index(owned.Body)
	if err != nil || info.Hash != want.Hash || !slices.Equal(info.Chunks, want.Chunks) {
		t.Fatalf("owned body indexes to %v (%v), not the builder's xorb", info, err)
	}
}

// shortSrc is a file that lost its end.
type shortSrc struct{ n int64 }

func (s shortSrc) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.n {
		return 0, io.EOF
	}
	n := min(int64(len(p)), s.n-off)
	return int(n), nil
}

// A lent payload the source no longer holds is an error naming where it was read, never a short
// body.
func TestLentPayloadSourceGone(t *testing.T) {
	data := vectors.SplitMix(50_000, 3)
	b := NewBuilder(PolicyAuto)
	b.Lend(shortSrc{n: 10_000})
	b.AddFrom(data, hash.Chunk(data), 0)
	x := b.Finish()
	_, err := io.ReadAll(x.Reader())
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading a body whose source is short: %v", err)
	}
	b.Lend(shortSrc{n: 10_000})
	b.AddFrom(data, hash.Chunk(data), 0)
	if err := b.Own(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Own with a short source: %v", err)
	}
}
