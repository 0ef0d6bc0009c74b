package xetfile

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// sizeLiar is a CAS whose file is chunk h twice: in xorb x1, honestly 8,192 bytes; in xorb x2,
// whose footer says h is 16,384 bytes (x2's hash is computed over that claim, so the footer is
// tied to it).
type sizeLiar struct {
	cas.Client
	data        []byte
	h, pad      hash.Hash
	x1, x2, all hash.Hash
}

func newSizeLiar() *sizeLiar {
	c := &sizeLiar{data: testutil.RandomBytes(8192, 51)}
	c.h, c.pad = hash.Chunk(c.data), hash.Chunk([]byte("pad"))
	c.x1 = hash.Merkle([]hash.Entry{{Hash: c.h, Size: 8192}})
	c.x2 = hash.Merkle([]hash.Entry{{Hash: c.h, Size: 16384}, {Hash: c.pad, Size: 8192}})
	var b hash.MerkleBuilder
	b.Add(hash.Entry{Hash: c.h, Size: 8192})
	b.Add(hash.Entry{Hash: c.h, Size: 16384})
	c.all = b.FileSum()
	return c
}

func (c *sizeLiar) Reconstruct(context.Context, hash.Hash, *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	fetch := func(x hash.Hash) []casapi.XorbFetch {
		return []casapi.XorbFetch{{URL: "https://cas.example/" + x.String(), Ranges: []casapi.XorbRange{
			{Chunks: casapi.ChunkRange{Start: 0, End: 1}, Bytes: casapi.ByteRange{Start: 0, End: 8 + 8192 - 1}}}}}
	}
	return &casapi.ReconstructionV2{
		Terms: []casapi.Term{{Hash: c.x1, UnpackedLength: 8192, Range: casapi.ChunkRange{Start: 0, End: 1}},
			{Hash: c.x2, UnpackedLength: 16384, Range: casapi.ChunkRange{Start: 0, End: 1}}},
		Xorbs: map[hash.Hash][]casapi.XorbFetch{c.x1: fetch(c.x1), c.x2: fetch(c.x2)},
	}, nil
}

func (c *sizeLiar) XorbFooter(_ context.Context, x hash.Hash, _ casapi.XorbFetch) (*xorb.Footer, error) {
	if x == c.x2 {
		return &xorb.Footer{Version: 1, Hash: x, ChunkHashes: []hash.Hash{c.h, c.pad}, BoundaryEnds: []uint32{8 + 8192, 2 * (8 + 8192)}, RawEnds: []uint32{16384, 24576}}, nil
	}
	return &xorb.Footer{Version: 1, Hash: x, ChunkHashes: []hash.Hash{c.h}, BoundaryEnds: []uint32{8 + 8192}, RawEnds: []uint32{8192}}, nil
}

func (c *sizeLiar) Fetch(context.Context, hash.Hash, casapi.XorbFetch, casapi.ByteRange) (io.ReadCloser, error) {
	header := []byte{0, 0x00, 0x20, 0, 0, 0x00, 0x20, 0} // a record of 8,192 bytes stored as they are
	return io.NopCloser(bytes.NewReader(append(header, c.data...))), nil
}

// A footer that lies about a chunk's size (the chunk, found by its hash in memory, is smaller)
// fails the read that uses it, and no other: before, a read of the whole file panicked slicing
// past the chunk, and a read of its first 8 KiB returned while the SHA-256 catching up behind it
// spun for ever under the file's lock, so every later read of the file hung.
func TestFooterLyingAboutAChunkSizeFailsTheRead(t *testing.T) {
	c := newSizeLiar()
	fs := New(Config{Log: zerolog.Nop(), Wait: 10 * time.Second})
	defer fs.Close()
	src := Source{CAS: c, File: c.all, Concurrency: 2, Where: "a lying CAS"}
	open := func() *File {
		return fs.Open("00", 24576, [32]byte{}, "", func(context.Context) (Source, error) { return src, nil })
	}
	read := func(f *File, n int, off int64) (got []byte, err error) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, n)
			var m int
			m, err = f.ReadAt(context.Background(), buf, off)
			got = buf[:m]
		}()
		select {
		case <-done:
			return got, err
		case <-time.After(30 * time.Second):
			t.Fatalf("a read of %d bytes at %d did not return", n, off)
			return nil, nil
		}
	}
	if _, err := read(open(), 24576, 0); err == nil {
		t.Fatal("a whole read through the lying footer succeeded")
	}
	f := open()
	if got, err := read(f, 8192, 0); err != nil || !bytes.Equal(got, c.data) {
		t.Fatalf("the first 8 KiB, honest in x1: %v", err)
	}
	if _, err := read(f, 10, 0); err != nil {
		t.Fatalf("a later read of the same file: %v", err)
	}
}
