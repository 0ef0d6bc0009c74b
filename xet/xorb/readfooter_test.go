package xorb

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

func storedObject(t testing.TB, nChunks int) []byte {
	t.Helper()
	b := NewBuilder(PolicyAuto)
	for i := range nChunks {
		d := bytes.Repeat([]byte{byte(i), 'x'}, 3000+i)
		b.Add(d, hash.Chunk(d))
	}
	x := b.Finish()
	return x.Footer().AppendTo(append([]byte(nil), x.Body...))
}

// ReadFooter, reading only the tail through an io.ReaderAt, gives what ParseFooter gives on the
// whole object, and refuses what it refuses.
func TestReadFooterAgreesWithParseFooter(t *testing.T) {
	obj := storedObject(t, 20)
	want, wantLen, err := ParseFooter(obj)
	if err != nil {
		t.Fatal(err)
	}
	got, gotLen, err := ReadFooter(bytes.NewReader(obj), int64(len(obj)))
	if err != nil || gotLen != int64(wantLen) || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadFooter = %d, %v; ParseFooter = %d", gotLen, err, wantLen)
	}
	for name, mut := range map[string]func([]byte) []byte{
		"short":          func(b []byte) []byte { return b[:10] },
		"length":         func(b []byte) []byte { b[len(b)-1] = 0x7F; return b },
		"magic":          func(b []byte) []byte { b[wantLen] = 'Y'; return b },
		"boundary":       func(b []byte) []byte { return append(b[:wantLen-1:wantLen-1], b[wantLen:]...) },
		"extra in front": func(b []byte) []byte { return append([]byte{0}, b...) },
	} {
		b := mut(append([]byte(nil), obj...))
		_, _, perr := ParseFooter(b)
		_, _, rerr := ReadFooter(bytes.NewReader(b), int64(len(b)))
		if rerr == nil || (perr == nil) != (rerr == nil) {
			t.Errorf("%s: ReadFooter %v, ParseFooter %v", name, rerr, perr)
		}
	}
}

// A footer length beyond what MaxChunks allows is refused before anything that size is allocated.
func TestReadFooterBoundsItsRead(t *testing.T) {
	obj := make([]byte, 100)
	obj[len(obj)-1] = 0xFF // info length ~4 GiB
	r := &countingReaderAt{ReaderAt: bytes.NewReader(obj)}
	if _, _, err := ReadFooter(r, 1<<40); !errors.Is(err, ErrNoFooter) {
		t.Fatalf("err %v, want ErrNoFooter", err)
	}
	if r.max > 4 {
		t.Fatalf("read %d bytes at once for a footer it should have refused", r.max)
	}
}

type countingReaderAt struct {
	ReaderAt interface {
		ReadAt([]byte, int64) (int, error)
	}
	max int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.max = max(c.max, len(p))
	if off >= 100 {
		off = 100 - int64(len(p))
	}
	return c.ReaderAt.ReadAt(p, off)
}

// Verify accepts a footer whose chunks aggregate to its xorb, and refuses one whose chunk hash,
// raw length or xorb is not the xorb's, and a version-0 footer (no lengths to check).
func TestFooterVerify(t *testing.T) {
	obj := storedObject(t, 20)
	f, _, err := ParseFooter(obj)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := f.Verify(f.Hash)
	if err != nil || len(ents) != 20 || ents[3].Hash != f.ChunkHashes[3] || ents[3].Size != uint64(f.RawEnds[3]-f.RawEnds[2]) {
		t.Fatalf("Verify of a good footer: %v (%d entries)", err, len(ents))
	}
	clone := func() *Footer {
		g := *f
		g.ChunkHashes = append([]hash.Hash(nil), f.ChunkHashes...)
		g.RawEnds = append([]uint32(nil), f.RawEnds...)
		return &g
	}
	bad := map[string]*Footer{}
	bad["chunk hash"] = clone()
	bad["chunk hash"].ChunkHashes[5][0] ^= 1
	bad["raw length"] = clone()
	bad["raw length"].RawEnds[5]++
	bad["version 0"] = clone()
	bad["version 0"].Version, bad["version 0"].RawEnds = 0, nil
	for name, g := range bad {
		if _, err := g.Verify(f.Hash); err == nil {
			t.Errorf("%s: a wrong footer verified", name)
		}
	}
	other := f.Hash
	other[0] ^= 1
	if _, err := f.Verify(other); err == nil {
		t.Error("a footer verified as another xorb's")
	}
}
