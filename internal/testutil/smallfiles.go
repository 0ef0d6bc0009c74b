package testutil

import (
	"crypto/sha256"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// SmallFilesBatch is one upload of small files: a xorb holding one chunk per file, and the
// upload-form shard that lists the xorb and registers the files, each over its own chunk.
type SmallFilesBatch struct {
	Xorb   hash.Hash
	Body   []byte // the xorb's chunk records
	Raw    uint64 // the xorb's raw bytes
	Shard  []byte
	Files  []hash.Hash
	SHA256 [][32]byte
}

// SmallFiles builds n distinct files of size bytes (at most xorb.MaxChunkRaw; random from seed),
// perXorb of them to a batch: what a store needs to hold many objects without chunking anything.
func SmallFiles(n, size, perXorb int, seed uint64) []SmallFilesBatch {
	var out []SmallFilesBatch
	for first := 0; first < n; first += perXorb {
		m := min(perXorb, n-first)
		b := xorb.NewBuilder(xorb.PolicyNone)
		contents := make([][]byte, m)
		for i := range contents {
			contents[i] = RandomBytes(size, seed+uint64(first+i))
			b.Add(contents[i], hash.Chunk(contents[i]))
		}
		x := b.Finish()
		batch := SmallFilesBatch{Xorb: x.Hash, Body: x.Body, Raw: x.RawBytes}
		sx := shard.Xorb{Hash: x.Hash, BytesInXorb: uint32(x.RawBytes)}
		sh := &shard.Shard{Version: shard.HeaderVersion}
		var at uint32
		for i, c := range contents {
			h := hash.Chunk(c)
			sx.Chunks = append(sx.Chunks, shard.XorbChunk{Hash: h, RawStart: at, RawLen: uint32(len(c))})
			at += uint32(len(c))
			file := hash.File([]hash.Entry{{Hash: h, Size: uint64(len(c))}})
			sum := sha256.Sum256(c)
			term := shard.Term{Xorb: x.Hash, UnpackedBytes: uint32(len(c)), ChunkStart: uint32(i), ChunkEnd: uint32(i + 1)}
			sh.Files = append(sh.Files, NewFile(file, []shard.Term{term}, []hash.Hash{h}, sum))
			batch.Files, batch.SHA256 = append(batch.Files, file), append(batch.SHA256, sum)
		}
		sh.Xorbs = []shard.Xorb{sx}
		batch.Shard = sh.AppendUpload(nil)
		out = append(out, batch)
	}
	return out
}
