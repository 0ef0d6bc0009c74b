package leader

import (
	"fmt"
	"io"
	"os"

	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// A file's sample is chunked from kinWindows windows of a sixteenth of the file each, at least
// kinMinWindow (two chunks on average) and at most kinWindow: reading and hashing them costs at most a
// quarter of what the upload itself reads and hashes, for a file of 2 MiB or more.
const (
	kinMinWindow = 128 << 10
	kinWindow    = 512 << 10
	kinWindows   = 4
)

// sample is what the leader knows of a large file before its upload takes a turn: the hashes of
// the chunks that end inside a few windows of it (its start and the places a quarter, a half and
// three quarters into it). Versions of one file share most chunks at the same places, and the
// chunker cuts equal content the same way a chunk or two after any start, so two versions share
// sampled hashes unless nearly every byte changed; files that are not versions of one another
// share none.
type sample map[hash.Hash]struct{}

// sampleFile samples the file at path of size bytes.
func sampleFile(path string, size int64) (sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sampling %s: %w", path, err)
	}
	defer f.Close()
	s := sample{}
	buf := make([]byte, min(kinWindow, max(kinMinWindow, size/16)))
	for i := range int64(kinWindows) {
		n, err := f.ReadAt(buf, size*i/kinWindows)
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("sampling %s: %w", path, err)
		}
		s.addWindow(buf[:n])
	}
	return s, nil
}

// addWindow adds the chunks of w that end at a cut of the content: chunk.Next answers 0, not a
// length, where the window ends before the content's next cut.
func (s sample) addWindow(w []byte) {
	for len(w) > 0 {
		n := chunk.Next(w)
		if n == 0 {
			return
		}
		s[hash.Chunk(w[:n])] = struct{}{}
		w = w[n:]
	}
}

// shares reports whether s and o have a chunk in common.
func (s sample) shares(o sample) bool {
	if len(o) < len(s) {
		s, o = o, s
	}
	for h := range s {
		if _, ok := o[h]; ok {
			return true
		}
	}
	return false
}
