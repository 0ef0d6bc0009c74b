package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	blobfs "github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/fs"
)

// failing wraps a Backend and fails Create for names with a prefix (a full disk, say).
type failing struct {
	blob.Backend
	prefix string
	fails  atomic.Int32
}

func (f *failing) Create(ctx context.Context, name string, r io.Reader) (bool, error) {
	if strings.HasPrefix(name, f.prefix) {
		f.fails.Add(1)
		return false, errBoom
	}
	return f.Backend.Create(ctx, name, r)
}

func (f *failing) CreateBatch(ctx context.Context, blobs []blob.NewBlob) ([]bool, error) {
	return blob.CreateEach(ctx, f, blobs)
}

// TestWriteErrors: a write failure is returned wrapped, and never leaves an entry pointing at
// something missing; a retry on working storage completes the registration.
func TestWriteErrors(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	x := r.xorb(0, 1, 2, 3)
	f := r.file(seg{x, 0, 4})
	body := r.shardBytes([]*testFile{f}, x)

	for _, c := range []struct {
		prefix       string
		fileVisible  bool // the file entry was written before the failure
		retryExisted bool
	}{
		{"xorbs/", false, false},
		{"files/", false, false},
		{"ns/", true, false},
		{"dedupe/", true, true},
	} {
		t.Run(c.prefix, func(t *testing.T) {
			dir := t.TempDir()
			fsb, err := blobfs.New(dir, blobfs.Options{})
			if err != nil {
				t.Fatal(err)
			}
			bad := &failing{Backend: fsb, prefix: c.prefix}
			s, _ := Open(dir, Options{Backend: bad})
			good, _ := Open(dir, Options{Backend: fsb})
			_, err = s.PutXorb(ctx, x.hash, bytes.NewReader(x.body))
			if c.prefix == "xorbs/" {
				if !errors.Is(err, errBoom) {
					t.Fatalf("PutXorb on failing storage: %v", err)
				}
				if ok, _ := good.HasXorb(ctx, x.hash); ok {
					t.Fatal("xorb visible after a failed put")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.PutShard(ctx, "", body)
			var inv *InvalidError
			if !errors.Is(err, errBoom) || errors.As(err, &inv) || bad.fails.Load() == 0 {
				t.Fatalf("PutShard failing on %s: %v", c.prefix, err)
			}
			_, err = good.FileSize(ctx, f.hash)
			if c.fileVisible != (err == nil) {
				t.Fatalf("file visible %v after the failure, want %v", err == nil, c.fileVisible)
			}
			if c.prefix != "dedupe/" {
				if _, _, err := good.LookupSHA256(ctx, "", hash.FromSHA256(f.sha)); !errors.Is(err, ErrNotFound) {
					t.Fatalf("SHA-256 mapping visible after the failure: %v", err)
				}
			}
			existed, err := good.PutShard(ctx, "", body)
			if err != nil || existed != c.retryExisted {
				t.Fatalf("retry: existed %v, err %v; want %v", existed, err, c.retryExisted)
			}
			if got, err := readFile(ctx, good, f.hash, nil); err != nil || !bytes.Equal(got, f.content) {
				t.Fatalf("after retry: %v", err)
			}
			if _, err := good.GlobalDedupe(ctx, r.hashes[0]); err != nil {
				t.Fatalf("dedupe entry after retry: %v", err)
			}
		})
	}
}

// TestCorruptStorage: damaged stored entries and footers are errors, never panics or wrong data.
func TestCorruptStorage(t *testing.T) {
	ctx := context.Background()
	r := loadRef(t)
	dir := t.TempDir()
	s, _ := Open(dir, Options{Backend: looseBackend(t, dir)}) // damaged below file by file
	x := r.xorb(0, 1, 2)
	mustPutXorb(t, s, x)
	f := r.file(seg{x, 0, 3})
	if _, err := s.PutShard(ctx, "", r.shardBytes([]*testFile{f}, x)); err != nil {
		t.Fatal(err)
	}
	originals := map[string][]byte{}
	damage := func(name string, fn func([]byte) []byte) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		b, ok := originals[name]
		if !ok {
			var err error
			if b, err = os.ReadFile(p); err != nil {
				t.Fatal(err)
			}
			originals[name] = b
		}
		if err := os.WriteFile(p, fn(bytes.Clone(b)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	damage(fileName(f.hash), func(b []byte) []byte { b[10] ^= 1; return b })
	if _, err := s.Reconstruct(ctx, f.hash, nil); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("Reconstruct with a damaged file entry: %v", err)
	}
	for _, cut := range []func([]byte) []byte{
		func(b []byte) []byte { return b[:len(b)-1] },
		func(b []byte) []byte { b[len(b)-30] ^= 0xff; return b },
		func(b []byte) []byte { return b[:3] },
		func(b []byte) []byte { b[len(b)-1] = 0x7f; return b },
	} {
		fresh, _ := Open(dir, Options{Backend: looseBackend(t, dir)}) // no cached footer
		damage(xorbName(x.hash), cut)
		if _, _, err := fresh.OpenXorb(ctx, x.hash); err == nil {
			t.Fatal("OpenXorb with a damaged footer succeeded")
		}
	}
}

// looseBackend is a filesystem backend without packs: every blob a file, for tests that damage
// or remove single blobs.
func looseBackend(t testing.TB, dir string) *blobfs.Backend {
	t.Helper()
	b, err := blobfs.New(dir, blobfs.Options{Loose: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
