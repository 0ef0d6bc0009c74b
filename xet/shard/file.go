package shard

import (
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// NewFile builds the file block xet-core uploads for a file: its terms, one verification entry per
// term, and the metadata ext holding sha256 (the ordinary digest; stored in hash.FromSHA256 form).
// chunkHashes are the file's own chunk hashes in file order; term i covers the next
// ChunkEnd-ChunkStart of them, and its verification entry is hash.Verification over those.
//
// The terms and chunkHashes come from the caller's own chunking, so a mismatch between them is a
// programming error and NewFile panics; BuildFile returns it as an error instead.
func NewFile(fileHash hash.Hash, terms []Term, chunkHashes []hash.Hash, sha256 [32]byte) File {
	f, err := BuildFile(fileHash, terms, chunkHashes, sha256)
	if err != nil {
		panic(err)
	}
	return f
}

// BuildFile is NewFile returning an error when the terms do not cover chunkHashes exactly.
func BuildFile(fileHash hash.Hash, terms []Term, chunkHashes []hash.Hash, sha256 [32]byte) (File, error) {
	f := File{
		Hash:         fileHash,
		Flags:        FlagVerification | FlagMetadataExt,
		Terms:        append([]Term(nil), terms...),
		Verification: make([]hash.Hash, len(terms)),
		SHA256:       hash.FromSHA256(sha256),
		HasSHA256:    true,
	}
	pos := 0
	for i, t := range terms {
		if t.ChunkEnd <= t.ChunkStart {
			return File{}, fmt.Errorf("shard: file %s term %d: chunk range [%d, %d) is empty", fileHash, i, t.ChunkStart, t.ChunkEnd)
		}
		n := int(t.ChunkEnd - t.ChunkStart)
		if n > len(chunkHashes)-pos {
			return File{}, fmt.Errorf("shard: file %s term %d: needs chunks %d..%d of the file, which has %d",
				fileHash, i, pos, pos+n, len(chunkHashes))
		}
		f.Verification[i] = hash.Verification(chunkHashes[pos : pos+n])
		pos += n
	}
	if pos != len(chunkHashes) {
		return File{}, fmt.Errorf("shard: file %s: terms cover %d chunks, the file has %d", fileHash, pos, len(chunkHashes))
	}
	return f, nil
}
