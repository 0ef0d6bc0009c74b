package lfspointer

import (
	"strings"
	"testing"

	"github.com/git-lfs/git-lfs/v3/lfs"
)

const pointerOid = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"

// FuzzDecodePointer holds Decode to git-lfs's own decoder: on every input, both accept or
// both refuse, and accepted pointers have the same oid and size.
func FuzzDecodePointer(f *testing.F) {
	for _, s := range []string{
		"version https://git-lfs.github.com/spec/v1\noid sha256:" + pointerOid + "\nsize 12345\n",
		"version https://hawser.github.com/spec/v1\r\noid sha256:" + pointerOid + "\r\nsize 0\r\n",
		"  \nversion http://git-media.io/v/2\n\noid sha256:" + pointerOid + "\nsize +5\n\t",
		"version https://git-lfs.github.com/spec/v1\next-0-foo sha256:" + pointerOid + "\next-1-bar sha256:" + pointerOid + "\noid sha256:" + pointerOid + "\nsize 1\n",
		"version https://git-lfs.github.com/spec/v1\next-0-foo sha256:" + pointerOid + "\next-0-bar sha256:" + pointerOid + "\noid sha256:" + pointerOid + "\nsize 1\n",
		"version https://git-lfs.github.com/spec/v1\noid sha256:" + strings.ToUpper(pointerOid) + "\nsize 1\n",
		"version https://git-lfs.github.com/spec/v1\noid sha256:" + pointerOid + "\nsize -1\n",
		"version https://git-lfs.github.com/spec/v1\noid sha256:" + pointerOid + "\nsize 1\nextra line\n",
		"version https://git-lfs.github.com/spec/v1\noid sha256:nothex\nsize 12\n",
		"version https://git-lfs.github.com/spec/v2\noid sha256:" + pointerOid + "\nsize 1\n",
		"oid sha256:" + pointerOid + "\nsize 1\ngit-lfs\n",
		"",
		"just text\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= MaxSize {
			return // the walk never decodes such a blob
		}
		ours, ok := Decode(data)
		theirs, err := lfs.DecodePointer(strings.NewReader(string(data)))
		theirsOK := err == nil && theirs.Oid != ""
		if ok != theirsOK {
			t.Fatalf("%q: ours says pointer=%v, git-lfs %v (%v)", data, ok, theirsOK, err)
		}
		if ok && (ours.Oid != theirs.Oid || ours.Size != theirs.Size) {
			t.Fatalf("%q: ours %+v, git-lfs %s %d", data, ours, theirs.Oid, theirs.Size)
		}
	})
}

// TestEncodeIsGitLFSsPointer: Encode writes, byte for byte, what git-lfs's clean filter writes for
// the same object, and Decode reads it back.
func TestEncodeIsGitLFSsPointer(t *testing.T) {
	for _, size := range []int64{0, 1, 12345, 1 << 40} {
		p := Pointer{Oid: pointerOid, Size: size}
		if got, want := string(p.Encode()), lfs.NewPointer(pointerOid, size, nil).Encoded(); got != want {
			t.Fatalf("size %d: Encode wrote %q, git-lfs %q", size, got, want)
		}
		if size == 0 {
			continue // the empty object's pointer is no bytes, which Decode reads as EmptyOid
		}
		if back, ok := Decode(p.Encode()); !ok || back != p {
			t.Fatalf("size %d: Decode(Encode()) = %+v, %v", size, back, ok)
		}
	}
}
