package testutil

import (
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// ZerosXorb is a xorb of n chunks of 128 KiB of zeros: n×128 KiB of raw bytes in about 520 bytes
// of body a chunk.
func ZerosXorb(n int) *xorb.Xorb {
	zero := make([]byte, xorb.MaxChunkRaw)
	h := hash.Chunk(zero)
	b := xorb.NewBuilder(xorb.PolicyLZ4)
	for range n {
		b.Add(zero, h)
	}
	return b.Finish()
}

// RepeatingFile is the upload block of one file naming every chunk of x, times times over, that
// claims SHA-256 sha (its file hash and verification entries are right): the shape of issue 41
// item 5's shard, which names far more content than it is long.
func RepeatingFile(x *xorb.Xorb, times int, sha [32]byte) shard.File {
	hashes := make([]hash.Hash, len(x.Chunks))
	for i, c := range x.Chunks {
		hashes[i] = c.Hash
	}
	v := hash.Verification(hashes)
	terms := make([]shard.Term, times)
	ver := make([]hash.Hash, times)
	var m hash.MerkleBuilder
	for i := range terms {
		terms[i] = shard.Term{Xorb: x.Hash, UnpackedBytes: uint32(x.RawBytes), ChunkStart: 0, ChunkEnd: uint32(len(x.Chunks))}
		ver[i] = v
		for _, c := range x.Chunks {
			m.Add(hash.Entry{Hash: c.Hash, Size: uint64(c.RawLen)})
		}
	}
	f, err := shard.UploadFile(m.FileSum(), terms, ver, sha)
	if err != nil {
		panic(err) // the terms and entries above always agree
	}
	return f
}

// RandomXorb is a xorb of n pseudo-random bytes (RandomBytes of seed) in chunks of 64 KiB, stored
// uncompressed: a distinct, valid xorb per seed.
func RandomXorb(n int, seed uint64) *xorb.Xorb {
	data := RandomBytes(n, seed)
	b := xorb.NewBuilder(xorb.PolicyNone)
	for off := 0; off < n; off += 64 << 10 {
		c := data[off:min(off+64<<10, n)]
		b.Add(c, hash.Chunk(c))
	}
	return b.Finish()
}
