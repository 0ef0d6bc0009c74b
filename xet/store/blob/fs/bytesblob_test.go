package fs

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// A BytesBlob whose size disagrees with what it yields is not stored.
func TestCreateChecksSize(t *testing.T) {
	be, err := New(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	short := blob.NewBytesBlob([]byte("hello.."))
	short.Parts()[0] = []byte("hello") // changed after its size was taken
	if _, err := be.Create(context.Background(), "xorbs/aa/x", short); err == nil {
		t.Fatal("Create accepted a blob shorter than its size")
	}
	if ok, _ := be.Exists(context.Background(), "xorbs/aa/x"); ok {
		t.Fatal("short blob stored")
	}
	// A large, aligned blob goes through O_DIRECT where possible and reads back intact.
	big := make([]byte, 3<<20+12345)
	for i := range big {
		big[i] = byte(i * 31)
	}
	if ok, err := be.Create(context.Background(), "xorbs/bb/y", blob.NewBytesBlob(big, []byte("tail"))); !ok || err != nil {
		t.Fatalf("Create = %v, %v", ok, err)
	}
	b, err := be.Open(context.Background(), "xorbs/bb/y")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := io.ReadAll(io.NewSectionReader(blob.ReaderAt(context.Background(), b), 0, b.Size()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append(big, "tail"...)) {
		t.Fatal("blob read back differs")
	}
}
