package fs

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// TestBlobsStoredWithoutPacks: a store of loose files (Windows has no packs) stores a blob in a
// new directory and reads it back. Every such write syncs its directory; on Windows that sync
// failed with "Access is denied" on every blob, so a local remote could not be pushed to at all.
func TestBlobsStoredWithoutPacks(t *testing.T) {
	root := filepath.Join(t.TempDir(), "remote.git", "xet")
	b, err := New(root, Options{Loose: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := flushDir(root); err != nil {
		t.Fatalf("flushing the store's directory: %v", err)
	}
	data := []byte("a blob in a directory of its own")
	created, err := b.Create(context.Background(), "xorbs/ab/abcd", bytes.NewReader(data))
	if err != nil || !created {
		t.Fatalf("Create = %v, %v", created, err)
	}
	bl, err := b.Open(context.Background(), "xorbs/ab/abcd")
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	got, err := io.ReadAll(io.NewSectionReader(blob.ReaderAt(context.Background(), bl), 0, bl.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %q", got)
	}
}
