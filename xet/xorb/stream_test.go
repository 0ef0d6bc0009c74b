package xorb

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"testing/iotest"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// streamIndex runs a StreamIndex over the n bytes r yields, through a buffer of the smallest size
// allowed, and returns its info and the records it handed out, concatenated.
func streamIndex(r io.Reader, n int) (*Info, []byte, error) {
	x := NewStreamIndex(r, int64(n), make([]byte, RecordHeaderSize+MaxChunkCompressed), IndexOptions{})
	defer x.Close()
	var recs []byte
	for {
		rec, err := x.Next()
		if err == io.EOF {
			return x.Info(), recs, nil
		}
		if err != nil {
			if x.Info() != nil {
				return nil, nil, errors.New("Info set after an error")
			}
			return nil, nil, err
		}
		recs = append(recs, rec...)
	}
}

// sameAsIndex checks that a StreamIndex of b, read in pieces of every shape, agrees with Index(b):
// both fail, or both give the same info and the stream hands out exactly b's records.
func sameAsIndex(t *testing.T, name string, b []byte) {
	t.Helper()
	want, werr := Index(b)
	for rname, r := range map[string]io.Reader{
		"whole": bytes.NewReader(b), "one byte": iotest.OneByteReader(bytes.NewReader(b)), "halves": iotest.HalfReader(bytes.NewReader(b)),
	} {
		got, recs, err := streamIndex(r, len(b))
		switch {
		case (err == nil) != (werr == nil):
			t.Fatalf("%s, %s: stream error %v, Index error %v", name, rname, err, werr)
		case err != nil:
			continue
		case !reflect.DeepEqual(got, want):
			t.Fatalf("%s, %s: stream info %+v, Index %+v", name, rname, got, want)
		case !bytes.Equal(recs, b[:want.RecordsLen]):
			t.Fatalf("%s, %s: handed out %d bytes of records, not the object's %d", name, rname, len(recs), want.RecordsLen)
		}
	}
}

// A xorb read as a stream gives what Index gives of it in memory, in every form a client sends:
// with its footer, without, with a cut-off footer, HF's reference xorb, and broken ones.
func TestStreamIndexMatchesIndex(t *testing.T) {
	b := NewBuilder(PolicyAuto)
	for i, d := range [][]byte{csvText(70000, 1), halfData(90000, 2), csvText(5, 3), halfData(131072, 4)} {
		b.Add(d, hash.Chunk(d))
		_ = i
	}
	x := b.Finish()
	body := bytes.Clone(x.Body)
	full := x.Footer().AppendTo(bytes.Clone(body))
	sameAsIndex(t, "records", body)
	sameAsIndex(t, "with footer", full)
	sameAsIndex(t, "cut-off footer", append(bytes.Clone(body), "XETB"...))
	sameAsIndex(t, "reference", vectors.ReadFile(t, "ev-population.xorb.first-10-chunks"))
	if info, _ := Index(full); info == nil || info.Footer == nil {
		t.Fatal("the footer was not read")
	}

	bad := bytes.Clone(full)
	bad[len(body)+40] ^= 1 // a chunk hash in the footer
	sameAsIndex(t, "footer disagrees", bad)
	sameAsIndex(t, "trailing bytes", append(bytes.Clone(body), "garbage!"...))
	sameAsIndex(t, "bare XETBLOB", append(bytes.Clone(body), "XETBLOB"...))
	sameAsIndex(t, "cut record", body[:len(body)-10])
	bad = bytes.Clone(body)
	bad[0] = 7 // record version
	sameAsIndex(t, "bad version", bad)
	if _, _, err := streamIndex(bytes.NewReader(body), len(body)); err != nil {
		t.Fatal(err)
	}

	// A stream shorter than its length is ErrStreamShort (cut on the way), not a malformed xorb.
	for _, n := range []int{len(body) / 2, len(body) - 1, len(full) - 3} {
		src := full[:n]
		if _, _, err := streamIndex(bytes.NewReader(src), len(full)); !errors.Is(err, ErrStreamShort) {
			t.Errorf("a stream cut at %d of %d bytes: %v, want ErrStreamShort", n, len(full), err)
		}
	}
	// What follows the records is read only up to a footer's size.
	huge := append(bytes.Clone(body), make([]byte, MaxFooterSize+1)...)
	copy(huge[len(body):], "XETBLOB")
	if _, _, err := streamIndex(bytes.NewReader(huge), len(huge)); err == nil {
		t.Error("accepted more than a footer after the records")
	}
}
