//go:build !unix

package handover

import (
	"os"
	"path/filepath"
	"testing"
)

// The file form (a child on the same handles) is private to its owner and removed by Decode.
func TestFileForm(t *testing.T) {
	dir := t.TempDir()
	v, err := encodeFile(Handover{Ahead: []byte("line\n"), InitAnswered: true}, dir)
	if err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 {
		t.Fatalf("%d files", len(left))
	}
	if fi, _ := os.Stat(filepath.Join(dir, left[0].Name())); fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("hand-over file mode %v: readable by others", fi.Mode())
	}
	if h, err := Decode(v); err != nil || string(h.Ahead) != "line\n" || !h.InitAnswered {
		t.Fatalf("Decode: %+v, %v", h, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("Decode left %d files", len(left))
	}
}
