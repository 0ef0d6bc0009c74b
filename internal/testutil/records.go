// Package testutil holds helpers that tests of several packages share. Nothing outside tests
// imports it.
package testutil

import (
	"bytes"
	"fmt"
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// DecodeRecords decodes the consecutive chunk records of b (a records region or a fetched range,
// stopping at a footer) with xorb.RecordReader, calling fn with each chunk's index and raw bytes.
// It stops at fn's first error and returns it.
func DecodeRecords(b []byte, fn func(i int, raw []byte) error) error {
	r := xorb.NewRecordReader(bytes.NewReader(b))
	for i := 0; ; i++ {
		raw, _, err := r.Next(nil)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(i, raw); err != nil {
			return err
		}
	}
}

// AppendRecord appends raw as one chunk record compressed with scheme (stored raw when that is not
// smaller, as xet-core does), built by a one-chunk xorb.Builder. Tests use it to craft xorb bodies
// the builder would never cut (too many chunks, too many bytes).
func AppendRecord(dst, raw []byte, scheme xorb.Scheme) []byte {
	policy := map[xorb.Scheme]xorb.Policy{xorb.SchemeNone: xorb.PolicyNone, xorb.SchemeLZ4: xorb.PolicyLZ4,
		xorb.SchemeBG4LZ4: xorb.PolicyBG4LZ4}[scheme]
	b := xorb.NewBuilder(policy)
	b.Add(raw, hash.Chunk(raw))
	return append(dst, b.Finish().Body...)
}

// FileBlock builds a file's upload block from all its chunk hashes (chunkHashes, in file order):
// term i covers the next ChunkEnd-ChunkStart of them. It is the reference an uploader's block,
// built term by term, is compared with.
func FileBlock(fileHash hash.Hash, terms []shard.Term, chunkHashes []hash.Hash, sha256 [32]byte) (shard.File, error) {
	ver := make([]hash.Hash, len(terms))
	pos := 0
	for i, t := range terms {
		n := int(t.ChunkEnd) - int(t.ChunkStart)
		if n <= 0 || n > len(chunkHashes)-pos {
			return shard.File{}, fmt.Errorf("term %d: chunk range [%d, %d) does not fit the file's %d chunks after %d",
				i, t.ChunkStart, t.ChunkEnd, len(chunkHashes), pos)
		}
		ver[i] = hash.Verification(chunkHashes[pos : pos+n])
		pos += n
	}
	if pos != len(chunkHashes) {
		return shard.File{}, fmt.Errorf("terms cover %d chunks, the file has %d", pos, len(chunkHashes))
	}
	return shard.UploadFile(fileHash, terms, ver, sha256)
}

// NewFile is FileBlock for terms the test built itself: a mismatch is the test's bug and panics.
func NewFile(fileHash hash.Hash, terms []shard.Term, chunkHashes []hash.Hash, sha256 [32]byte) shard.File {
	f, err := FileBlock(fileHash, terms, chunkHashes, sha256)
	if err != nil {
		panic(err)
	}
	return f
}
