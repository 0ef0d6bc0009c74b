package xorb

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// scanAll decodes every record a RecordScanner hands out.
func scanAll(b []byte, r io.Reader, n int64) ([][]byte, error) {
	s := NewRecordScanner(r, make([]byte, RecordHeaderSize+MaxChunkCompressed), n)
	var out [][]byte
	for {
		rec, _, err := s.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		raw, _, _, err := DecodeRecord(nil, rec)
		if err != nil {
			return out, err
		}
		out = append(out, raw)
	}
}

// The scanner reads what RecordReader reads, one byte at a time or all at once, and stops at the
// footer of a stored object.
func TestRecordScannerAgreesWithRecordReader(t *testing.T) {
	obj := storedObject(t, 30)
	var want [][]byte
	rr := NewRecordReader(bytes.NewReader(obj))
	for {
		raw, _, err := rr.Next(nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, raw)
	}
	for name, r := range map[string]io.Reader{
		"whole":    bytes.NewReader(obj),
		"one byte": iotest.OneByteReader(bytes.NewReader(obj)),
	} {
		got, err := scanAll(obj, r, int64(len(obj)))
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: %d records, %v; want %d", name, len(got), err, len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: record %d differs", name, i)
			}
		}
	}
}

// A stream ending before its promised length is ErrStreamShort (fetch again); a record cut off
// within the promised length is malformed data, not ErrStreamShort.
func TestRecordScannerShortStream(t *testing.T) {
	obj := storedObject(t, 5)
	_, recordsLen, err := ParseFooter(obj)
	if err != nil {
		t.Fatal(err)
	}
	cut := recordsLen / 2
	_, err = scanAll(obj, bytes.NewReader(obj[:cut]), int64(len(obj)))
	if !errors.Is(err, ErrStreamShort) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("stream cut at %d bytes: %v, want ErrStreamShort", cut, err)
	}
	_, err = scanAll(obj, bytes.NewReader(obj[:cut]), int64(cut))
	if err == nil || errors.Is(err, ErrStreamShort) {
		t.Fatalf("a range of %d bytes ending inside a record: %v, want a data error", cut, err)
	}
}

// FuzzRecordScanner: any bytes give records or a clean error, never a panic, and the records are
// the ones RecordReader finds.
func FuzzRecordScanner(f *testing.F) {
	f.Add(storedObject(f, 3))
	f.Add([]byte("XETBL"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := scanAll(b, bytes.NewReader(b), int64(len(b)))
		rr := NewRecordReader(bytes.NewReader(b))
		for i := range got {
			raw, _, rerr := rr.Next(nil)
			if rerr != nil || !bytes.Equal(raw, got[i]) {
				t.Fatalf("record %d: RecordReader %v", i, rerr)
			}
		}
		_ = err
	})
}
