package store

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// A download's stream of a xorb range (XorbSection) is the bytes ReadAt sees, for a long range
// (read with O_DIRECT on a filesystem that allows it) and a short one at an unaligned offset, and a
// range past the records is refused before anything is read.
func TestXorbSectionIsTheRecords(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	x := builtXorb(t, 150, 3)
	if ok, err := s.PutBuiltXorb(ctx, "", x); !ok || err != nil {
		t.Fatalf("PutBuiltXorb = %v, %v", ok, err)
	}
	f, recordsLen, err := s.OpenXorb(ctx, x.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if recordsLen < 2<<20 {
		t.Fatalf("the xorb's records are %d bytes: too short to test a long section", recordsLen)
	}
	for _, r := range [][2]int64{{0, recordsLen}, {4097, recordsLen - 4097 - 13}, {777, 1000}} {
		want := make([]byte, r[1])
		if _, err := f.ReadAt(want, r[0]); err != nil {
			t.Fatal(err)
		}
		rc, err := s.XorbSection(ctx, x.Hash, r[0], r[1])
		if err != nil {
			t.Fatalf("XorbSection(%d, %d): %v", r[0], r[1], err)
		}
		got, err := io.ReadAll(rc)
		if cerr := rc.Close(); err == nil {
			err = cerr
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("XorbSection(%d, %d): %d bytes, equal %v, err %v", r[0], r[1], len(got), bytes.Equal(got, want), err)
		}
	}
	for _, r := range [][2]int64{{recordsLen - 10, 11}, {-1, 5}, {0, -1}} {
		if rc, err := s.XorbSection(ctx, x.Hash, r[0], r[1]); err == nil {
			rc.Close()
			t.Errorf("XorbSection(%d, %d) of %d record bytes: no error", r[0], r[1], recordsLen)
		}
	}
}
