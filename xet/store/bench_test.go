package store

import (
	"bytes"
	"context"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	blobfs "github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/fs"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

func BenchmarkValidateXorb(b *testing.B) {
	r := loadRef(b)
	x := r.xorb(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	b.SetBytes(int64(len(r.prefix)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ValidateXorb(x.hash, x.body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutXorb(b *testing.B) {
	r := loadRef(b)
	x := r.xorb(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	b.SetBytes(int64(len(r.prefix)))
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		s := openStore(b)
		b.StartTimer()
		if ins, err := s.PutXorb(ctx, x.hash, bytes.NewReader(x.body)); err != nil || !ins {
			b.Fatal(ins, err)
		}
	}
}

// manyTerms builds a shard for a file of n terms alternating between two xorbs (no content kept).
func manyTerms(r *refData, xa, xb *testXorb, n int) (hash.Hash, []byte, uint64) {
	var terms []shard.Term
	var chunkHashes []hash.Hash
	var entries []hash.Entry
	var size uint64
	for i := 0; i < n; i++ {
		x := []*testXorb{xa, xb}[i%2]
		s := i % 4
		var un uint32
		for c := s; c < s+2; c++ {
			k := x.ref[c]
			chunkHashes = append(chunkHashes, r.hashes[k])
			entries = append(entries, hash.Entry{Hash: r.hashes[k], Size: uint64(len(r.raws[k]))})
			un += uint32(len(r.raws[k]))
		}
		terms = append(terms, shard.Term{Xorb: x.hash, UnpackedBytes: un, ChunkStart: uint32(s), ChunkEnd: uint32(s + 2)})
		size += uint64(un)
	}
	fh := hash.File(entries)
	sh := &shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{testutil.NewFile(fh, terms, chunkHashes, [32]byte{1})}}
	return fh, sh.AppendUpload(nil), size
}

func benchStore(b *testing.B, terms int) (*Store, hash.Hash, []byte, uint64) {
	r := loadRef(b)
	s := openStore(b)
	xa, xb := r.xorb(0, 1, 2, 3, 4), r.xorb(5, 6, 7, 8, 9)
	mustPutXorb(b, s, xa)
	mustPutXorb(b, s, xb)
	fh, body, size := manyTerms(r, xa, xb, terms)
	if _, err := s.PutShard(context.Background(), "", body); err != nil {
		b.Fatal(err)
	}
	return s, fh, body, size
}

// BenchmarkPutShard validates and re-registers a 2000-term shard (the existed path does all checks).
func BenchmarkPutShard(b *testing.B) {
	s, _, body, size := benchStore(b, 2000)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.PutShard(context.Background(), "", body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReconstruct(b *testing.B) {
	for _, c := range []struct {
		name  string
		terms int
		rng   bool
	}{{"terms=1", 1, false}, {"terms=2000", 2000, false}, {"terms=2000/range", 2000, true}} {
		b.Run(c.name, func(b *testing.B) {
			s, fh, _, size := benchStore(b, c.terms)
			var rng *casapi.ByteRange
			if c.rng {
				rng = &casapi.ByteRange{Start: size / 3, End: size/3 + 10<<20}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Reconstruct(context.Background(), fh, rng); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPutXorb64MiB puts a xorb of about 60 MiB (half compressible chunks) into a fresh store,
// with the body's length known as over HTTP: streamed, and read whole first into a recycled
// receive buffer as before streaming (a backend that does not say it streams), in one run.
func BenchmarkPutXorb64MiB(b *testing.B) {
	x := builtXorb(b, 3000, 9)
	ctx := context.Background()
	for _, mode := range []string{"streamed", "whole"} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(int64(len(x.Body)))
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				var opts Options
				if mode == "whole" {
					fsb, err := blobfs.New(dir, blobfs.Options{})
					if err != nil {
						b.Fatal(err)
					}
					opts.Backend = wholeCreates{fsb}
				}
				s, err := Open(dir, opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if ins, err := s.PutXorb(ctx, x.Hash, bytes.NewReader(x.Body)); err != nil || !ins {
					b.Fatal(ins, err)
				}
			}
		})
	}
}

// wholeCreates is a backend that is handed whole blobs, not streams.
type wholeCreates struct{ blob.Backend }

func (w wholeCreates) Features() blob.Features {
	f := w.Backend.Features()
	f.StreamsCreates = false
	return f
}
