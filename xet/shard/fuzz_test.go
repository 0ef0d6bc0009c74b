package shard

import (
	"reflect"
	"testing"
)

// FuzzParse: Parse never panics, and what it accepts survives Marshal, AppendUpload and
// AppendLocal: each re-parses to the same files and xorbs. Seeds are in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			return
		}
		again, err := Parse(s.Marshal())
		if err != nil {
			t.Fatalf("Marshal of a parsed shard does not parse: %v", err)
		}
		if !reflect.DeepEqual(again, s) {
			t.Fatal("Parse(Marshal(s)) differs from s")
		}
		up, err := Parse(s.AppendUpload(nil))
		if err != nil {
			t.Fatalf("upload form does not parse: %v", err)
		}
		if !reflect.DeepEqual(up.Files, s.Files) || !reflect.DeepEqual(up.Xorbs, s.Xorbs) || up.Footer != nil {
			t.Fatal("upload form differs")
		}
		loc, err := Parse(s.AppendLocal(nil, 1, 2))
		if err != nil {
			t.Fatalf("local form does not parse: %v", err)
		}
		if !reflect.DeepEqual(loc.Files, s.Files) || !reflect.DeepEqual(loc.Xorbs, s.Xorbs) {
			t.Fatal("local form differs")
		}
		for xi, x := range loc.Xorbs {
			for ci, c := range x.Chunks {
				gx, gc, ok := loc.FindChunk(c.Hash)
				if !ok || loc.Xorbs[gx].Chunks[gc].Hash != c.Hash {
					t.Fatalf("chunk %d/%d not found through the lookup", xi, ci)
				}
			}
		}
	})
}
