package shard

import (
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// BuildFile builds a file's upload block from all its chunk hashes (term i covers the next
// ChunkEnd-ChunkStart of them), the reference UploadFile's blocks are checked against. (Other
// packages' tests use internal/testutil.FileBlock, which this package's tests cannot import.)
func BuildFile(fileHash hash.Hash, terms []Term, chunkHashes []hash.Hash, sha256 [32]byte) (File, error) {
	ver := make([]hash.Hash, len(terms))
	pos := 0
	for i, t := range terms {
		n := int(t.ChunkEnd) - int(t.ChunkStart)
		if n <= 0 || n > len(chunkHashes)-pos {
			return File{}, fmt.Errorf("term %d: chunk range [%d, %d) does not fit after chunk %d of %d", i, t.ChunkStart, t.ChunkEnd, pos, len(chunkHashes))
		}
		ver[i] = hash.Verification(chunkHashes[pos : pos+n])
		pos += n
	}
	if pos != len(chunkHashes) {
		return File{}, fmt.Errorf("terms cover %d chunks, the file has %d", pos, len(chunkHashes))
	}
	return UploadFile(fileHash, terms, ver, sha256)
}

// NewFile is BuildFile panicking on a mismatch (the test's own bug).
func NewFile(fileHash hash.Hash, terms []Term, chunkHashes []hash.Hash, sha256 [32]byte) File {
	f, err := BuildFile(fileHash, terms, chunkHashes, sha256)
	if err != nil {
		panic(err)
	}
	return f
}
