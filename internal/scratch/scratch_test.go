package scratch

import (
	"bytes"
	"os"
	"runtime"
	"testing"
)

// What is appended reads back at the offsets Append returned; a read past what was written is an
// error; the file is not in its directory while open (on platforms that unlink open files) nor
// after Close.
func TestAppendReadBack(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, "x-*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	var parts [][]byte
	for i := range 50 {
		b := bytes.Repeat([]byte{byte(i)}, 1+i*37)
		off, err := s.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		offs, parts = append(offs, off), append(parts, b)
	}
	for i := len(parts) - 1; i >= 0; i-- {
		got := make([]byte, len(parts[i]))
		if err := s.ReadAt(got, offs[i]); err != nil || !bytes.Equal(got, parts[i]) {
			t.Fatalf("part %d at %d: %v", i, offs[i], err)
		}
	}
	if err := s.ReadAt(make([]byte, 2), s.Size()-1); err == nil {
		t.Fatal("read past the end succeeded")
	}
	if left, _ := os.ReadDir(dir); runtime.GOOS != "windows" && len(left) != 0 {
		t.Fatalf("%d files in the directory while open", len(left))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d files in the directory after Close", len(left))
	}
}
