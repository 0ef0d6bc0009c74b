package testutil

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// HFJSShard turns an upload-form shard (footer_size 0) into the shape huggingface.js
// (@huggingface/hub, packages/hub/src/utils/uploadShards.ts) sends: footer_size 200 in the header,
// num_bytes_on_disk set in each xorb header (from xorbBytes, by xorb hash string), then a 200-byte
// footer whose lookup offsets and counts are all zero, with the creation time, expiry 0, the byte
// totals and footer_offset.
func HFJSShard(upload []byte, xorbBytes map[string]uint32, created uint64) ([]byte, error) {
	sh, err := shard.Parse(upload)
	if err != nil {
		return nil, err
	}
	b := bytes.Clone(upload)
	le := binary.LittleEndian
	le.PutUint64(b[40:], shard.FooterSize)
	// The xorb section ends with its bookend at the end of the upload form; walk back to its start.
	xorbOff := len(upload) - shard.EntrySize
	for i := len(sh.Xorbs) - 1; i >= 0; i-- {
		xorbOff -= shard.EntrySize * (len(sh.Xorbs[i].Chunks) + 1)
	}
	var onDisk, stored uint64
	for i, off := 0, xorbOff; i < len(sh.Xorbs); i++ {
		n := xorbBytes[sh.Xorbs[i].Hash.String()]
		le.PutUint32(b[off+44:], n)
		onDisk += uint64(n)
		stored += uint64(sh.Xorbs[i].BytesInXorb)
		off += shard.EntrySize * (len(sh.Xorbs[i].Chunks) + 1)
	}
	footerAt := uint64(len(b))
	f := make([]byte, shard.FooterSize)
	le.PutUint64(f[0:], shard.FooterVersion)
	le.PutUint64(f[8:], shard.HeaderSize)
	le.PutUint64(f[16:], uint64(xorbOff))
	// 24..72: lookup offsets and counts, all zero; 72..104: no HMAC key.
	le.PutUint64(f[104:], created)
	// 112: expiry 0; 120..168 reserved; 176: huggingface.js leaves materialized bytes at 0.
	le.PutUint64(f[168:], onDisk)
	le.PutUint64(f[184:], stored)
	le.PutUint64(f[192:], footerAt)
	return append(b, f...), nil
}

// OneXorbFile is a file whose chunks (given in order) make one xorb, and the upload-form shard that
// registers it with one term, as a client that cuts xorbs by serialized size writes a compressible
// file: Body is the xorb's records (LZ4), Content the file.
type OneXorbFile struct {
	Body, Content []byte
	Xorb, File    hash.Hash
	SHA256        [32]byte
	Shard         []byte
}

// NewOneXorbFile builds a OneXorbFile from the contents of its chunks.
func NewOneXorbFile(chunks [][]byte) *OneXorbFile {
	f := &OneXorbFile{}
	entries := make([]hash.Entry, len(chunks))
	hashes := make([]hash.Hash, len(chunks))
	xc := make([]shard.XorbChunk, len(chunks))
	for i, c := range chunks {
		h := hash.Chunk(c)
		f.Body = AppendRecord(f.Body, c, xorb.SchemeLZ4)
		entries[i], hashes[i] = hash.Entry{Hash: h, Size: uint64(len(c))}, h
		xc[i] = shard.XorbChunk{Hash: h, RawStart: uint32(len(f.Content)), RawLen: uint32(len(c))}
		f.Content = append(f.Content, c...)
	}
	f.Xorb, f.File, f.SHA256 = hash.Merkle(entries), hash.File(entries), sha256.Sum256(f.Content)
	block := NewFile(f.File, []shard.Term{{Xorb: f.Xorb, UnpackedBytes: uint32(len(f.Content)), ChunkStart: 0, ChunkEnd: uint32(len(chunks))}}, hashes, f.SHA256)
	sh := &shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{block},
		Xorbs: []shard.Xorb{{Hash: f.Xorb, BytesInXorb: uint32(len(f.Content)), Chunks: xc}}}
	f.Shard = sh.AppendUpload(nil)
	return f
}
