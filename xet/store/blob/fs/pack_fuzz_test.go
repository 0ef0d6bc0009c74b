package fs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzPackIndex: the index parser never panics, never claims more bytes than it got, and gives
// only entries a reader can use (a name, data past the pack's magic, at most packMaxBlob); an
// entry it wrote parses back the same.
func FuzzPackIndex(f *testing.F) {
	f.Add(appendIndexEntry(nil, packEntry{name: "xorbs/ab/cd", off: 8, n: 100, crc: 7}))
	f.Add(append(appendIndexEntry(nil, packEntry{name: "files/ab/cd", off: 30, n: 5}), 1, 2, 3))
	f.Add([]byte{0xff, 0xff, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		es, used := parseIndex(b)
		if used > len(b) || used < 0 {
			t.Fatalf("used %d of %d bytes", used, len(b))
		}
		var again []byte
		for _, e := range es {
			if e.name == "" || e.off < int64(len(packMagic)) || e.n < 0 || e.n > packMaxBlob {
				t.Fatalf("unusable entry %+v", e)
			}
			again = appendIndexEntry(again, e)
		}
		if !bytes.Equal(again, b[:used]) {
			t.Fatal("the entries do not write back to the bytes they came from")
		}
	})
}

// FuzzPackRecovery: whatever a pack and its index hold (a crash, damage), recovery never panics,
// and afterwards every indexed blob lies inside the pack and every record it indexed anew has the
// bytes its checksum says.
func FuzzPackRecovery(f *testing.F) {
	rec := appendRecord([]byte(packMagic), "xorbs/ab/cd", []byte("hello world"))
	e, _, _ := parseRecord(rec[len(packMagic):])
	e.off += int64(len(packMagic))
	f.Add(rec, appendIndexEntry([]byte(idxMagic), e))
	f.Add(rec, []byte(idxMagic))                                    // index lags the pack
	f.Add(append(rec, rec[len(packMagic):20]...), []byte(idxMagic)) // a torn record after a whole one
	f.Add([]byte(packMagic), []byte("XETP"))                        // index magic cut short
	f.Fuzz(func(t *testing.T, pack, idx []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "p"+packExt), pack, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "p"+idxExt), idx, 0o644); err != nil {
			t.Fatal(err)
		}
		p, x, end, idxEnd, err := lockAndRecover(dir, "p", recoverHint{})
		if err != nil || p == nil {
			return // refused as not a pack: fine, as long as it did not panic
		}
		p.Close()
		x.Close()
		ib, _ := os.ReadFile(filepath.Join(dir, "p"+idxExt))
		pb, _ := os.ReadFile(filepath.Join(dir, "p"+packExt))
		if int64(len(ib)) != idxEnd || int64(len(pb)) != end {
			t.Fatalf("after recovery: index %d bytes (said %d), pack %d (said %d)", len(ib), idxEnd, len(pb), end)
		}
		es, _ := parseIndex(ib[len(idxMagic):])
		for _, e := range es {
			if e.off+e.n > end {
				t.Fatalf("entry %q names bytes [%d,%d) of a pack of %d", e.name, e.off, e.off+e.n, end)
			}
		}
	})
}

// FuzzSortedIndex: whatever a .sidx file holds, opening it, looking names up in it and checking it
// never panic, and a lookup answers only with the record of that very name, whole inside the pack.
func FuzzSortedIndex(f *testing.F) {
	dir := f.TempDir()
	pack := []byte(packMagic)
	var es []packEntry
	for i := 0; i < 40; i++ {
		e, _, _ := parseRecord(appendRecord(nil, blobName(i), blobData(i)))
		e.off += int64(len(pack))
		es = append(es, e)
		pack = appendRecord(pack, blobName(i), blobData(i))
	}
	if err := os.WriteFile(filepath.Join(dir, "p"+packExt), pack, 0o644); err != nil {
		f.Fatal(err)
	}
	pf, err := os.Open(filepath.Join(dir, "p"+packExt))
	if err != nil {
		f.Fatal(err)
	}
	defer pf.Close()
	var tail packTail
	for _, e := range es {
		tail.add(e)
	}
	s, err := writeSortedIndex(dir, dir, "seed", pf, nil, tail.keys(), 100, int64(len(pack)))
	if err != nil {
		f.Fatal(err)
	}
	s.f.Close()
	seed, _ := os.ReadFile(filepath.Join(dir, "seed"+sortedExt))
	f.Add(seed)
	f.Add(seed[:sortedHeader])
	f.Add([]byte(sortedMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "x"+sortedExt)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s := openSortedIndex(path)
		if s == nil {
			return
		}
		defer s.f.Close()
		_ = checkSorted(s)
		for i := 0; i < 42; i++ {
			e, _, ok, err := s.find(pf, blobName(i), nameKey(blobName(i)))
			if err != nil {
				t.Fatal(err)
			}
			if ok && (i >= 40 || e.off != es[i].off || e.n != es[i].n) {
				t.Fatalf("%s answered with %+v", blobName(i), e)
			}
		}
	})
}
