package shard

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// zeroLookups gives a local shard huggingface.js's footer: lookup tables dropped, their offsets
// and counts zero.
func zeroLookups(s *Shard) []byte {
	b := s.AppendUpload(nil)
	le := binary.LittleEndian
	le.PutUint64(b[40:], FooterSize)
	f := make([]byte, FooterSize)
	le.PutUint64(f[0:], FooterVersion)
	le.PutUint64(f[8:], HeaderSize)
	le.PutUint64(f[192:], uint64(len(b)))
	return append(b, f...)
}

// ParseUpload reads every shape of the same content to the same files and xorbs: the upload form,
// a local shard with lookup tables, and huggingface.js's footer with zero lookups (which Parse
// refuses).
func TestParseUploadShapes(t *testing.T) {
	s := testShard()
	want, err := Parse(s.AppendUpload(nil))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"upload form":    s.AppendUpload(nil),
		"local":          s.AppendLocal(nil, 1, 2),
		"huggingface.js": zeroLookups(s),
	} {
		got, keyed, err := ParseUpload(b)
		if err != nil || keyed || got.Footer != nil {
			t.Fatalf("%s: %v (keyed %v)", name, err, keyed)
		}
		if !reflect.DeepEqual(got.Files, want.Files) || !reflect.DeepEqual(got.Xorbs, want.Xorbs) {
			t.Fatalf("%s: content differs from the upload form's", name)
		}
	}
	if _, err := Parse(zeroLookups(s)); err == nil {
		t.Fatal("Parse accepts zero lookup offsets: the liberal reader is not needed any more?")
	}
	// Garbage between the xorb bookend and the end of a shard without footer is still refused.
	if _, _, err := ParseUpload(append(s.AppendUpload(nil), 1, 2, 3)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("trailing bytes without footer: %v", err)
	}
}

// FuzzParseUpload: never a panic; what it accepts re-encodes to an upload form that reads back the
// same; whatever Parse accepts, it accepts with the same content.
func FuzzParseUpload(f *testing.F) {
	s := testShard()
	f.Add(s.AppendUpload(nil))
	f.Add(s.AppendLocal(nil, 1, 2))
	f.Add(zeroLookups(s))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := ParseUpload(b)
		if full, perr := Parse(b); perr == nil {
			if err != nil {
				t.Fatalf("Parse accepts what ParseUpload refuses: %v", err)
			}
			if !reflect.DeepEqual(got.Files, full.Files) || !reflect.DeepEqual(got.Xorbs, full.Xorbs) {
				t.Fatal("content differs from Parse's")
			}
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not match ErrInvalid: %v", err)
			}
			return
		}
		again, _, err := ParseUpload(got.AppendUpload(nil))
		if err != nil || !reflect.DeepEqual(again.Files, got.Files) || !reflect.DeepEqual(again.Xorbs, got.Xorbs) {
			t.Fatalf("re-encoded upload form: %v", err)
		}
	})
}
