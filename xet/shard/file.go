package shard

import (
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// UploadFile builds the file block xet-core uploads for a file: its terms, one verification entry
// per term, and the metadata ext holding sha256 (the ordinary digest; stored in hash.FromSHA256
// form). verification[i] is hash.Verification over the chunk hashes of term i, which an uploader
// computes term by term while chunking. Every term must cover at least one chunk. An empty file has
// no terms and no verification entries.
func UploadFile(fileHash hash.Hash, terms []Term, verification []hash.Hash, sha256 [32]byte) (File, error) {
	if len(verification) != len(terms) {
		return File{}, fmt.Errorf("shard: file %s has %d terms and %d verification hashes", fileHash, len(terms), len(verification))
	}
	for i, t := range terms {
		if t.ChunkEnd <= t.ChunkStart {
			return File{}, fmt.Errorf("shard: file %s term %d: chunk range [%d, %d) is empty", fileHash, i, t.ChunkStart, t.ChunkEnd)
		}
	}
	f := File{
		Hash:         fileHash,
		Flags:        FlagVerification | FlagMetadataExt,
		Verification: append([]hash.Hash{}, verification...),
		SHA256:       hash.FromSHA256(sha256),
		HasSHA256:    true,
	}
	if len(terms) > 0 {
		f.Terms = append([]Term(nil), terms...)
	}
	return f, nil
}
