package shard

import (
	"errors"
	"reflect"
	"testing"
)

// leanRead reads a shard file with footer the way the local shard cache does: layout, then the
// xorb section block by block, each block parsed again on its own.
func leanRead(b []byte) (Layout, []Xorb, error) {
	size := int64(len(b))
	if size < HeaderSize+FooterSize {
		l, err := ReadLayout(b, b, size)
		return l, nil, err
	}
	l, err := ReadLayout(b[:HeaderSize], b[size-FooterSize:], size)
	if err != nil {
		return l, nil, err
	}
	var xorbs []Xorb
	sc := NewXorbScanner(b[l.XorbOff:l.XorbEnd])
	for sc.Next() {
		blk := sc.Block()
		at := int(l.XorbOff) + blk.Off
		again, err := ParseXorbBlock(b[at : at+XorbBlockSize(blk.N)])
		if err != nil {
			return l, nil, err
		}
		chunks := again.Chunks()
		for i := range chunks {
			if k := blk.ChunkKey(i); k != chunks[i].Hash.Truncate() {
				return l, nil, errors.New("ChunkKey differs from the chunk's truncated hash")
			}
		}
		xorbs = append(xorbs, Xorb{Hash: blk.Hash, Chunks: chunks})
	}
	return l, xorbs, sc.Err()
}

// The lean reader finds in a local shard what Parse finds: the same xorbs and chunks, the footer's
// key and times.
func TestLeanReaderAgreesWithParse(t *testing.T) {
	s := testShard()
	b := s.AppendLocal(nil, 111, 222)
	full := mustParse(t, b)
	l, xorbs, err := leanRead(b)
	if err != nil {
		t.Fatal(err)
	}
	if l.Created != 111 || l.Expires != 222 || l.Key != full.Footer.HMACKey || uint64(l.XorbOff) != full.Footer.XorbInfoOffset {
		t.Fatalf("layout %+v, footer %+v", l, full.Footer)
	}
	if len(xorbs) != len(full.Xorbs) {
		t.Fatalf("%d xorbs, Parse found %d", len(xorbs), len(full.Xorbs))
	}
	for i := range xorbs {
		if xorbs[i].Hash != full.Xorbs[i].Hash || !reflect.DeepEqual(xorbs[i].Chunks, full.Xorbs[i].Chunks) {
			t.Fatalf("xorb %d differs from Parse's", i)
		}
	}
	if l.MaxChunks() < countChunks(full) {
		t.Fatalf("MaxChunks %d below the %d chunks", l.MaxChunks(), countChunks(full))
	}
}

func countChunks(s *Shard) int {
	n := 0
	for _, x := range s.Xorbs {
		n += len(x.Chunks)
	}
	return n
}

// Damage the lean reader must refuse, each with an error matching ErrInvalid.
func TestLeanReaderRefuses(t *testing.T) {
	good := testShard().AppendLocal(nil, 1, 2)
	for name, mut := range map[string]func([]byte) []byte{
		"upload form":   func([]byte) []byte { return testShard().AppendUpload(nil) },
		"truncated":     func(b []byte) []byte { return b[:len(b)-1] },
		"footer offset": func(b []byte) []byte { b[len(b)-8]++; return b },
		"xorb offset":   func(b []byte) []byte { b[len(b)-FooterSize+16]++; return b },
		"tag":           func(b []byte) []byte { b[0] ^= 1; return b },
		"chunk count": func(b []byte) []byte {
			l, _ := ReadLayout(b[:HeaderSize], b[len(b)-FooterSize:], int64(len(b)))
			b[l.XorbOff+36] = 0xFF
			return b
		},
		"lookup count": func(b []byte) []byte { b[len(b)-FooterSize+32]++; return b },
	} {
		b := mut(append([]byte(nil), good...))
		if _, _, err := leanRead(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want an ErrInvalid error", name, err)
		}
	}
}

// FuzzLeanReader: on any bytes the lean reader fails cleanly, and whatever it accepts from a file
// that Parse also accepts, it reads as Parse does.
func FuzzLeanReader(f *testing.F) {
	f.Add(testShard().AppendLocal(nil, 1, 2))
	f.Add(testShard().AppendUpload(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, xorbs, err := leanRead(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not match ErrInvalid: %v", err)
			}
			return
		}
		full, err := Parse(b)
		if err != nil {
			return // the lean reader skips the file section and lookups
		}
		if len(xorbs) != len(full.Xorbs) {
			t.Fatalf("%d xorbs, Parse found %d", len(xorbs), len(full.Xorbs))
		}
		for i := range xorbs {
			if !reflect.DeepEqual(xorbs[i].Chunks, full.Xorbs[i].Chunks) {
				t.Fatalf("xorb %d differs from Parse's", i)
			}
		}
	})
}
