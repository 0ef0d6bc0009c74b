package fs

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestFSBlobSection: a file blob's sections (O_DIRECT for long ones, where the filesystem allows it)
// hand out exactly the bytes at their offsets, for offsets and lengths on and off the alignment,
// up to the end of a file whose size is not aligned, and report a section past the end.
func TestFSBlobSection(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 3*4096*1024+777) // ~12 MiB, not aligned
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	p := filepath.Join(dir, "blob")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := fsBlob{f: f, size: int64(len(data))}
	cases := [][2]int64{
		{0, int64(len(data))}, {1, int64(len(data)) - 1}, {4095, 5 << 20}, {4096, 2 << 20},
		{int64(len(data)) - (1 << 20) - 3, (1 << 20) + 3}, {123, 10}, {4<<20 - 5, 1<<20 + 17},
	}
	for _, c := range cases {
		rc, err := b.Section(context.Background(), c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		// Small reads too: the reader must hand out partial buffers correctly.
		got, err := io.ReadAll(io.LimitReader(struct{ io.Reader }{rc}, c[1]+10))
		rc.Close()
		if err != nil {
			t.Fatalf("section %v: %v", c, err)
		}
		if !bytes.Equal(got, data[c[0]:c[0]+c[1]]) {
			t.Fatalf("section %v: %d bytes differ from the file's", c, len(got))
		}
	}
	rc, err := b.Section(context.Background(), int64(len(data))-(1<<20), 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); err == nil {
		t.Fatal("a section past the end of the file read without error")
	}
}
