package chunk

import (
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Summary describes a whole stream: its chunks (hash and length, in order), Xet file hash, SHA-256
// and size.
type Summary struct {
	Chunks   []hash.Entry
	FileHash hash.Hash
	SHA256   [32]byte
	Size     int64
}

// Summarize reads r to the end and returns its Summary. Chunking and chunk hashing run on one
// goroutine and SHA-256 on another, beside it (see Reader); both have stopped when it returns.
func Summarize(r io.Reader) (*Summary, error) {
	return SummarizeFunc(r, nil)
}

// SummarizeFunc is Summarize calling fn (when not nil) with each chunk as it is found, on the
// calling goroutine; c.Data is valid during the call only. An error from fn stops the work and is
// returned.
func SummarizeFunc(r io.Reader, fn func(c Chunk) error) (*Summary, error) {
	rd := NewReaderOptions(r, Options{SHA256: true})
	defer rd.Close()
	s := &Summary{}
	for {
		c, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if fn != nil {
			if err := fn(c); err != nil {
				return nil, err
			}
		}
		s.Chunks = append(s.Chunks, hash.Entry{Hash: c.Hash, Size: uint64(len(c.Data))})
		s.Size += int64(len(c.Data))
	}
	s.SHA256, _ = rd.SHA256()
	s.FileHash = hash.File(s.Chunks)
	return s, nil
}
