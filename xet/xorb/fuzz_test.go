package xorb

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Seed corpora live in testdata/fuzz/<Name>/; these f.Add seeds add small valid inputs of every
// kind so that a plain `go test` exercises the properties too.
func fuzzSeeds() [][]byte {
	text := csvText(3000, 1)
	return [][]byte{
		appendTestRecord(nil, text, SchemeLZ4),
		appendTestRecord(nil, text, SchemeBG4LZ4),
		appendTestRecord(nil, text[:100], SchemeNone),
		[]byte("XETBLOB\x01"),
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, h, n, err := DecodeRecord(nil, b)
		if err != nil {
			if len(out) != 0 || n != 0 {
				t.Fatalf("error with output %d bytes, n %d", len(out), n)
			}
			return
		}
		if len(out) != int(h.RawLen) || n != RecordHeaderSize+int(h.CompressedLen) || n > len(b) {
			t.Fatalf("header %+v, n %d, out %d bytes", h, n, len(out))
		}
		if cap(out) > MaxChunkRaw {
			t.Fatalf("allocated %d bytes", cap(out))
		}
		// What decodes re-encodes to a record that decodes to the same bytes.
		again, h2, _, err := DecodeRecord(nil, appendTestRecord(nil, out, h.Scheme))
		if err != nil || !bytes.Equal(again, out) || h2.RawLen != h.RawLen {
			t.Fatalf("re-encoded record: %v", err)
		}
	})
}

func FuzzIndex(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	x := NewBuilder(PolicyAuto)
	for _, s := range [][]byte{csvText(2000, 2), halfData(3000, 3)} {
		x.Add(s, hash.Chunk(s))
	}
	xo := x.Finish()
	f.Add(xo.Footer().AppendTo(bytes.Clone(xo.Body)))
	f.Fuzz(func(t *testing.T, b []byte) {
		sameAsIndex(t, "fuzz", b)
		info, err := Index(b)
		// The stream reader agrees with Index on which records there are.
		r := NewRecordReader(bytes.NewReader(b))
		var n int
		var rerr error
		for {
			if _, _, rerr = r.Next(nil); rerr != nil {
				break
			}
			n++
		}
		if err != nil {
			return
		}
		if info.RecordsLen > len(b) || len(info.Chunks) > MaxChunks || info.RawBytes > MaxBytes {
			t.Fatalf("info out of range: %d records bytes, %d chunks, %d raw", info.RecordsLen, len(info.Chunks), info.RawBytes)
		}
		if rerr != io.EOF || n != len(info.Chunks) {
			t.Fatalf("RecordReader: %d chunks then %v; Index %d chunks", n, rerr, len(info.Chunks))
		}
		prev := uint32(0)
		for i, c := range info.Chunks {
			if c.Start != prev || c.End <= c.Start || int(c.End) > info.RecordsLen {
				t.Fatalf("chunk %d at [%d,%d) after %d", i, c.Start, c.End, prev)
			}
			prev = c.End
		}
		if err := decodeAllRecords(b[:info.RecordsLen], func(i int, raw []byte) error {
			if len(raw) != int(info.Chunks[i].RawLen) {
				return errors.New("length differs")
			}
			return nil
		}); err != nil {
			t.Fatalf("DecodeRecords on Index's records: %v", err)
		}
	})
}

func FuzzDecodeLZ4Frame(f *testing.F) {
	for _, s := range [][]byte{
		appendLZ4Frame(nil, csvText(3000, 4)),
		appendLZ4Frame(nil, csvText(70000, 5)),
		appendLZ4Frame(nil, []byte("x")),
		{0x50, 0x2A, 0x4D, 0x18, 1, 0, 0, 0, 9},
	} {
		f.Add(s, uint32(1<<17))
	}
	f.Fuzz(func(t *testing.T, b []byte, max uint32) {
		maxSize := int(max % (1 << 22))
		out, err := decodeLZ4Frame(nil, b, maxSize)
		if err != nil {
			if !errors.Is(err, ErrLZ4) {
				t.Fatalf("error not wrapping ErrLZ4: %v", err)
			}
			return
		}
		if len(out) > maxSize || cap(out) > maxSize {
			t.Fatalf("decoded %d bytes (cap %d) over the limit %d", len(out), cap(out), maxSize)
		}
		again, err := decodeLZ4Frame(nil, appendLZ4Frame(nil, out), len(out))
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("re-encoded frame: %v", err)
		}
	})
}
