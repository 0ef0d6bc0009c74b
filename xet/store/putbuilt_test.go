package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	blobfs "github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/fs"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// builtXorb builds a xorb of n chunks (compressible and incompressible ones) with xorb.Builder.
func builtXorb(t testing.TB, n int, seed uint64) *xorb.Xorb {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	b := xorb.NewBuilder(xorb.PolicyAuto)
	b.UseBuffer(make([]byte, 0, xorb.BodyCap))
	for i := range n {
		data := make([]byte, 8192+r.IntN(60000))
		for k := range data {
			if i%2 == 0 {
				data[k] = byte(r.Uint32())
			} else {
				data[k] = byte(k / 97)
			}
		}
		b.Add(data, hash.Chunk(data))
	}
	return b.Finish()
}

func readObject(t *testing.T, s *Store, h hash.Hash) []byte {
	t.Helper()
	f, _, err := s.OpenXorb(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	obj, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<30))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// The trusted path stores exactly what the validating path stores.
func TestPutBuiltXorbMatchesPutXorb(t *testing.T) {
	ctx := context.Background()
	x := builtXorb(t, 40, 1)
	dir := t.TempDir()
	trusted, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checked := openStore(t)
	if ok, err := trusted.PutBuiltXorb(ctx, "", x); !ok || err != nil {
		t.Fatalf("PutBuiltXorb = %v, %v", ok, err)
	}
	if ok, err := trusted.PutBuiltXorb(ctx, "", x); ok || err != nil {
		t.Fatalf("second PutBuiltXorb = %v, %v; want false, nil", ok, err)
	}
	if ok, err := checked.PutXorbBytes(ctx, x.Hash, x.Body); !ok || err != nil {
		t.Fatalf("PutXorbBytes = %v, %v", ok, err)
	}
	a, b := readObject(t, trusted, x.Hash), readObject(t, checked, x.Hash)
	if !bytes.Equal(a, b) {
		t.Fatal("PutBuiltXorb and PutXorbBytes stored different objects")
	}
	if _, err := ValidateXorb(x.Hash, a); err != nil {
		t.Fatalf("object stored by PutBuiltXorb does not validate: %v", err)
	}
	// A fresh store on the same directory reads the footer back (no cached index).
	again, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := again.OpenXorb(ctx, x.Hash); err != nil || n != int64(len(x.Body)) {
		t.Fatalf("reopened: records length %d, %v", n, err)
	}
}

// Inconsistent built xorbs are refused with an *InvalidError and nothing is stored.
func TestPutBuiltXorbRejects(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(x *xorb.Xorb){
		"hash": func(x *xorb.Xorb) { x.Hash[0] ^= 1 },
		"chunk hash": func(x *xorb.Xorb) {
			x.Chunks[3].Hash[5] ^= 1 // then x.Hash no longer matches the infos
		},
		"raw length": func(x *xorb.Xorb) { x.Chunks[2].RawLen++ },
		"offsets":    func(x *xorb.Xorb) { x.Chunks[1].Start++ },
		"scheme": func(x *xorb.Xorb) {
			x.Chunks[0].Scheme = (x.Chunks[0].Scheme + 1) % 3
		},
		"header": func(x *xorb.Xorb) { x.Body[x.Chunks[4].Start+5]++ },
		"truncated": func(x *xorb.Xorb) {
			x.Body = x.Body[:len(x.Body)-1]
		},
		"no chunks": func(x *xorb.Xorb) { x.Chunks, x.Body, x.RawBytes = nil, nil, 0 },
		"raw total": func(x *xorb.Xorb) { x.RawBytes++ },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			x := builtXorb(t, 8, 2)
			x.Chunks = append([]xorb.ChunkInfo(nil), x.Chunks...)
			spoil(x)
			s := openStore(t)
			_, err := s.PutBuiltXorb(ctx, "", x)
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("err = %v, want *InvalidError", err)
			}
			if ok, _ := s.HasXorb(ctx, x.Hash); ok {
				t.Fatal("a refused xorb was stored")
			}
		})
	}
}

// A xorb stored as a file of its own is handed out by OpenXorb as that file (what the server's
// sendfile of xorb ranges needs: an io.ReadSeeker with a syscall.Conn); a small, packed one reads
// the same bytes through ranged reads.
func TestOpenXorbHandsOutTheFile(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	for _, n := range []int{64, 2} { // about 2.3 MiB: a file of its own; a few KiB: packed
		x := builtXorb(t, n, uint64(n))
		if _, err := s.PutBuiltXorb(ctx, "", x); err != nil {
			t.Fatal(err)
		}
		f, recordsLen, err := s.OpenXorb(ctx, x.Hash)
		if err != nil {
			t.Fatal(err)
		}
		_, isFile := f.(*os.File)
		if big := len(x.Body) > blobfs.MaxPacked; big != isFile {
			t.Errorf("xorb of %d bytes handed out as %T", len(x.Body), f)
		}
		got := make([]byte, recordsLen)
		if _, err := f.ReadAt(got, 0); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		f.Close()
		if !bytes.Equal(got, x.Body) {
			t.Fatalf("xorb of %d bytes: its records read back differ", len(x.Body))
		}
	}
}

// The xorbs an in-process session builds for a repository (a basic upload the server chunks) are
// that repository's uploads, stored at once or held back and stored without their shard: its
// usage counts them whole, and it may reference them.
func TestBuiltXorbsAreUploads(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	x, y := builtXorb(t, 4, 60), builtXorb(t, 2, 61)
	if _, err := s.PutBuiltXorb(ctx, "org/a", x); err != nil {
		t.Fatal(err)
	}
	p, err := PrepareBuiltXorb(y)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutPendingXorbs(ctx, "org/b", []*PendingXorb{p}); err != nil {
		t.Fatal(err)
	}
	for ns, x := range map[string]*xorb.Xorb{"org/a": x, "org/b": y} {
		if u := usage(t, s, ns); u.Stored != x.RawBytes {
			t.Errorf("%s: %+v, want its xorb's %d raw bytes", ns, u, x.RawBytes)
		}
		if ok, err := s.UploadedBy(ctx, ns, x.Hash); !ok || err != nil {
			t.Errorf("%s uploaded its xorb: %v %v", ns, ok, err)
		}
	}
}
