package xorb

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash/hashtest"
)

// frameHeaderVector returns the two 7-byte LZ4 frame headers of the MISC LZ4FRAMEHDR vector (for
// chunks of at most 64 KiB, and larger ones).
func frameHeaderVector(t *testing.T) (small, large []byte) {
	t.Helper()
	lines := vectors.Lines(t, "LZ4FRAMEHDR")
	if len(lines) != 1 {
		t.Fatalf("want one LZ4FRAMEHDR line, got %d", len(lines))
	}
	var groups [][]byte
	var cur []byte
	for _, f := range lines[0][1:] {
		switch {
		case strings.HasSuffix(f, ":"):
			cur = []byte{}
		case f == ";":
			groups = append(groups, cur)
			cur = nil
		case cur != nil && len(f) == 2:
			var b byte
			for _, c := range f {
				b = b<<4 | byte(strings.IndexRune("0123456789abcdef", c))
			}
			cur = append(cur, b)
		}
	}
	if len(groups) < 2 || len(groups[0]) != 7 || len(groups[1]) != 7 {
		t.Fatalf("cannot parse LZ4FRAMEHDR line %v", lines[0])
	}
	return groups[0], groups[1]
}

func TestReferenceXorbPrefix(t *testing.T) {
	obj := vectors.ReadFile(t, "ev-population.xorb.first-10-chunks")
	ref := vectors.ReferenceChunks(t)[:10]
	small, large := frameHeaderVector(t)

	info, err := Index(obj)
	if err != nil {
		t.Fatalf("Index: %v", err)
	}
	if len(info.Chunks) != 10 || info.RecordsLen != len(obj) || info.Footer != nil {
		t.Fatalf("Index: %d chunks, records %d of %d bytes, footer %v", len(info.Chunks), info.RecordsLen, len(obj), info.Footer)
	}
	entries := make([]hash.Entry, 10)
	var raw uint64
	for i, c := range info.Chunks {
		if c.Hash.String() != ref[i].Hash || uint64(c.RawLen) != ref[i].Size {
			t.Errorf("chunk %d: %s %d, reference %s %d", i, c.Hash, c.RawLen, ref[i].Hash, ref[i].Size)
		}
		if c.Scheme != SchemeLZ4 {
			t.Errorf("chunk %d: scheme %v, want lz4", i, c.Scheme)
		}
		if c.RawStart != raw {
			t.Errorf("chunk %d: raw start %d, want %d", i, c.RawStart, raw)
		}
		raw += uint64(c.RawLen)
		entries[i] = hash.Entry{Hash: hashtest.MustParse(ref[i].Hash), Size: ref[i].Size}

		rec := obj[c.Start:c.End]
		want := small
		if c.RawLen > 65536 {
			want = large
		}
		if !bytes.Equal(rec[8:15], want) {
			t.Errorf("chunk %d (%d bytes): frame header % x, want % x", i, c.RawLen, rec[8:15], want)
		}
		if !bytes.Equal(rec[len(rec)-4:], []byte{0, 0, 0, 0}) {
			t.Errorf("chunk %d: frame does not end with the end mark", i)
		}

		// Re-encode: same header bytes (payload bytes may differ), decodes back.
		data, h, n, err := DecodeRecord(nil, rec)
		if err != nil || n != len(rec) || h.RawLen != c.RawLen {
			t.Fatalf("chunk %d: DecodeRecord: n=%d h=%+v err=%v", i, n, h, err)
		}
		again := appendTestRecord(nil, data, SchemeLZ4)
		if again[4] != byte(SchemeLZ4) || !bytes.Equal(again[5:8], rec[5:8]) || again[0] != 0 {
			t.Errorf("chunk %d: re-encoded header % x, reference % x", i, again[:8], rec[:8])
		}
		if !bytes.Equal(again[8:15], rec[8:15]) {
			t.Errorf("chunk %d: re-encoded frame header % x, reference % x", i, again[8:15], rec[8:15])
		}
		back, _, _, err := DecodeRecord(nil, again)
		if err != nil || !bytes.Equal(back, data) {
			t.Errorf("chunk %d: re-encoded record does not decode back: %v", i, err)
		}
		if kl := bg4MaxKL(data); kl != 0 || BG4Recommended(data) {
			t.Errorf("chunk %d: BG4 predictor kl=%v, want 0 (CSV text gets LZ4)", i, kl)
		}
	}
	if want := hash.Merkle(entries); info.Hash != want {
		t.Errorf("xorb hash %s, want %s from the reference chunk list", info.Hash, want)
	}
	if info.RawBytes != raw {
		t.Errorf("RawBytes %d, want %d", info.RawBytes, raw)
	}

	// The same through the stream reader and DecodeRecords.
	rr := NewRecordReader(bytes.NewReader(obj))
	var got []hash.Hash
	for {
		data, _, err := rr.Next(nil)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("RecordReader: %v", err)
			}
			break
		}
		got = append(got, hash.Chunk(data))
	}
	var got2 []hash.Hash
	if err := decodeAllRecords(obj, func(i int, raw []byte) error {
		if i != len(got2) {
			t.Errorf("DecodeRecords index %d, want %d", i, len(got2))
		}
		got2 = append(got2, hash.Chunk(raw))
		return nil
	}); err != nil {
		t.Fatalf("DecodeRecords: %v", err)
	}
	for i := range info.Chunks {
		if i >= len(got) || got[i] != info.Chunks[i].Hash || i >= len(got2) || got2[i] != info.Chunks[i].Hash {
			t.Fatalf("stream readers disagree with Index at chunk %d (%d, %d chunks)", i, len(got), len(got2))
		}
	}
	if len(got) != 10 || len(got2) != 10 {
		t.Fatalf("stream readers found %d and %d chunks", len(got), len(got2))
	}
}

func TestRecordHeader(t *testing.T) {
	rec := appendTestRecord(nil, []byte("hello hello hello hello hello hello hello"), SchemeNone)
	h, err := ParseRecordHeader(rec)
	if err != nil || h != (RecordHeader{0, 41, SchemeNone, 41}) {
		t.Fatalf("ParseRecordHeader = %+v, %v", h, err)
	}
	hdr := func(b ...byte) []byte { return b }
	bad := []struct {
		name string
		b    []byte
		want string
	}{
		{"version", hdr(1, 4, 0, 0, 0, 4, 0, 0), "version"},
		{"scheme", hdr(0, 4, 0, 0, 3, 4, 0, 0), "scheme 3"},
		{"scheme99", hdr(0, 4, 0, 0, 99, 4, 0, 0), "scheme 99"},
		{"raw over limit", hdr(0, 4, 0, 0, 1, 0x01, 0x00, 0x02), "raw length 131073"},
		{"payload over limit", hdr(0, 0x01, 0x00, 0x04, 1, 4, 0, 0), "payload length 262145"},
		{"none lengths differ", hdr(0, 4, 0, 0, 0, 5, 0, 0), "payload length 4 != raw length 5"},
		{"short", hdr(0, 4, 0), "truncated"},
	}
	for _, c := range bad {
		if _, err := ParseRecordHeader(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	// The limits themselves are accepted.
	if _, err := ParseRecordHeader(hdr(0, 0x00, 0x00, 0x04, 1, 0x00, 0x00, 0x02)); err != nil {
		t.Errorf("raw 131072 / payload 262144 rejected: %v", err)
	}
	if _, err := ParseRecordHeader([]byte("XETBLOB\x01")); !errors.Is(err, ErrFooter) {
		t.Errorf("XETBLOB header: %v, want ErrFooter", err)
	}
}

func TestAppendRecordSchemes(t *testing.T) {
	text := csvText(70000, 1)
	floats := halfData(65536, 2) // bf16-like
	random := vectors.SplitMix(50000, 3)
	for _, c := range []struct {
		name   string
		data   []byte
		scheme Scheme
		want   Scheme
	}{
		{"text lz4", text, SchemeLZ4, SchemeLZ4},
		{"text bg4", text, SchemeBG4LZ4, SchemeBG4LZ4},
		{"bf16 bg4", floats, SchemeBG4LZ4, SchemeBG4LZ4},
		{"random lz4 falls back", random, SchemeLZ4, SchemeNone},
		{"random bg4 falls back", random, SchemeBG4LZ4, SchemeNone},
		{"none", text, SchemeNone, SchemeNone},
		{"tiny", []byte("ab"), SchemeLZ4, SchemeNone},
		{"max chunk", bytes.Repeat([]byte("xet!"), MaxChunkRaw/4), SchemeLZ4, SchemeLZ4},
	} {
		prefix := []byte("prefix")
		rec := appendTestRecord(prefix, c.data, c.scheme)
		if !bytes.Equal(rec[:6], []byte("prefix")) {
			t.Fatalf("%s: dst prefix clobbered", c.name)
		}
		rec = rec[6:]
		h, err := ParseRecordHeader(rec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if h.Scheme != c.want || int(h.RawLen) != len(c.data) || int(h.CompressedLen) != len(rec)-8 {
			t.Errorf("%s: header %+v for %d bytes in a %d-byte record", c.name, h, len(c.data), len(rec))
		}
		if h.Scheme != SchemeNone && int(h.CompressedLen) >= len(c.data) {
			t.Errorf("%s: compressed %d not smaller than raw %d", c.name, h.CompressedLen, len(c.data))
		}
		out, h2, n, err := DecodeRecord([]byte("x"), append(rec, "trailing"...))
		if err != nil || n != len(rec) || h2 != h || !bytes.Equal(out[1:], c.data) || out[0] != 'x' {
			t.Errorf("%s: DecodeRecord n=%d err=%v equal=%v", c.name, n, err, bytes.Equal(out[1:], c.data))
		}
	}
	// BG4 pays on float data: smaller than plain LZ4.
	lz := appendTestRecord(nil, floats, SchemeLZ4)
	bg := appendTestRecord(nil, floats, SchemeBG4LZ4)
	if len(bg) >= len(lz) {
		t.Errorf("bg4-lz4 record %d bytes, lz4 %d: BG4 should win on bf16-like data", len(bg), len(lz))
	}
}

func TestDecodeRecordErrors(t *testing.T) {
	data := csvText(5000, 9)
	rec := appendTestRecord(nil, data, SchemeLZ4)
	bgrec := appendTestRecord(nil, data, SchemeBG4LZ4)
	mut := func(b []byte, f func([]byte)) []byte { c := bytes.Clone(b); f(c); return c }
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated payload", rec[:len(rec)-1], "truncated"},
		{"raw length too big", mut(rec, func(c []byte) { c[5]++ }), "header says 5001"},
		{"raw length too small", mut(rec, func(c []byte) { c[5]-- }), ""},
		{"bg4 raw length", mut(bgrec, func(c []byte) { c[5]-- }), "bg4-lz4"},
		{"bad frame magic", mut(rec, func(c []byte) { c[8] = 0 }), "bad magic"},
		{"header checksum", mut(rec, func(c []byte) { c[14] ^= 1 }), "header checksum"},
		{"corrupt block", mut(rec, func(c []byte) { c[20] = 0xFF; c[21] = 0xFF; c[22] = 0xFF }), "lz4"},
		{"no end mark", rec[:len(rec)-4], "truncated"},
	}
	for _, c := range cases {
		b := c.b
		if c.name == "no end mark" {
			b = bytes.Clone(b)
			n := len(b) - 8
			b[1], b[2], b[3] = byte(n), byte(n>>8), byte(n>>16)
		}
		_, _, _, err := DecodeRecord(nil, b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}
