package testutil

import (
	"bytes"
	"encoding/binary"

	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
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
