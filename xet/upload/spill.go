package upload

import (
	"encoding/binary"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/scratch"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// spillRecord is the size of one chunk in the spill file: its hash, raw start and raw length.
const spillRecord = 32 + 4 + 4

// listCacheSize is how many chunk lists of cut xorbs are kept in memory (the most recently used):
// at most 8192 chunks each, so about 3 MB.
var listCacheSize = 8 // a variable for tests

// chunkLists holds the chunk lists of the session's cut xorbs. A cut xorb's list (needed to match
// dedupe runs against it, to confirm index hits and to build the shard) is written, when it leaves
// the most recently used, to a temp file, the spill, which is unlinked at once where the platform allows, so nothing is left behind even
// when the process dies; only the listCacheSize most recently used lists stay in memory. So what a
// session holds per chunk does not grow with its bytes beyond the chunk index (see chunkIndex).
// When no temp file can be made, lists stay in memory (logged once): the upload works, only its
// memory is no longer bounded.
//
// The first error reading or writing the spill is kept in err; the session fails on it (a lost list
// would make a shard wrong).
//
// Concurrency: like the sxorbs, chunkLists belongs to the session's Upload/Finish goroutine.
type chunkLists struct {
	dir     string
	log     zerolog.Logger
	f       *scratch.File
	noSpill bool
	err     error
	recent  []*sxorb // the cut xorbs whose lists are in memory, most recent last
	buf     []byte
}

// add records the chunk list of a just-cut xorb x (x.list is set). It stays in memory among the
// listCacheSize most recent; it is spilled only when it leaves them, so a session of a few xorbs
// (every small file) never makes a temp file.
func (l *chunkLists) add(x *sxorb) {
	x.nChunks = uint32(len(x.list))
	l.touch(x)
}

// spill writes x's list to the spill file (created on first use) and reports whether x.list may be
// dropped.
func (l *chunkLists) spill(x *sxorb) bool {
	if x.spilled {
		return true
	}
	if l.err != nil || l.noSpill {
		return false
	}
	if l.f == nil {
		f, err := scratch.Create(l.dir, "xet-upload-*.chunks")
		if err != nil {
			l.noSpill = true
			l.log.Warn().Err(err).Msg("upload: no temp file for the chunk lists of cut xorbs; keeping them in memory")
			return false
		}
		l.f = f
	}
	b := l.buf[:0]
	for _, c := range x.list {
		b = append(b, c.Hash[:]...)
		b = binary.LittleEndian.AppendUint32(b, c.RawStart)
		b = binary.LittleEndian.AppendUint32(b, c.RawLen)
	}
	l.buf = b
	off, err := l.f.Append(b)
	if err != nil {
		l.err = fmt.Errorf("upload: spilling the chunk list of xorb %s: %w", x.hash, err)
		return false
	}
	x.spillOff, x.spilled = off, true
	return true
}

// list returns the chunk list of cut xorb x, reading it back from the spill when it is not in
// memory (nil with l.err set when that fails).
func (l *chunkLists) list(x *sxorb) []shard.XorbChunk {
	if x.list != nil || !x.spilled {
		if x.spilled {
			l.touch(x)
		}
		return x.list
	}
	if l.err != nil {
		return nil
	}
	list, err := l.read(x)
	if err != nil {
		l.err = err
		return nil
	}
	x.list = list
	l.touch(x)
	return list
}

// read reads the chunk list of cut xorb x from the spill into a new slice.
func (l *chunkLists) read(x *sxorb) ([]shard.XorbChunk, error) {
	n := int(x.nChunks)
	if cap(l.buf) < n*spillRecord {
		l.buf = make([]byte, n*spillRecord)
	}
	b := l.buf[:n*spillRecord]
	if err := l.f.ReadAt(b, x.spillOff); err != nil {
		return nil, fmt.Errorf("upload: reading back the chunk list of xorb %s: %w", x.hash, err)
	}
	list := make([]shard.XorbChunk, n)
	for i := range list {
		r := b[i*spillRecord:]
		copy(list[i].Hash[:], r[:32])
		list[i].RawStart = binary.LittleEndian.Uint32(r[32:])
		list[i].RawLen = binary.LittleEndian.Uint32(r[36:])
	}
	return list, nil
}

// touch makes x the most recently used list and drops the least recently used beyond
// listCacheSize.
func (l *chunkLists) touch(x *sxorb) {
	for i, y := range l.recent {
		if y == x {
			copy(l.recent[i:], l.recent[i+1:])
			l.recent[len(l.recent)-1] = x
			return
		}
	}
	l.recent = append(l.recent, x)
	if len(l.recent) > listCacheSize {
		if l.spill(l.recent[0]) {
			l.recent[0].list = nil
		}
		copy(l.recent, l.recent[1:])
		l.recent[len(l.recent)-1] = nil
		l.recent = l.recent[:len(l.recent)-1]
	}
}

// shardXorb returns the shard entry of cut xorb x, with a chunk list of its own (read back when
// spilled; callers may keep it).
func (l *chunkLists) shardXorb(x *sxorb) (shard.Xorb, error) {
	list := x.list
	if list == nil && x.spilled {
		var err error
		if list, err = l.read(x); err != nil {
			l.err = err
			return shard.Xorb{}, err
		}
	}
	return shard.Xorb{Hash: x.hash, BytesInXorb: uint32(x.raw), Chunks: list}, nil
}

// close releases the spill file.
func (l *chunkLists) close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// chunkAt returns the hash and raw length of chunk i of cut xorb x.
func (l *chunkLists) chunkAt(x *sxorb, i uint32) (hash.Hash, uint64, bool) {
	if i >= x.nChunks {
		return hash.Hash{}, 0, false
	}
	list := l.list(x)
	if int(i) >= len(list) {
		return hash.Hash{}, 0, false
	}
	c := &list[i]
	return c.Hash, uint64(c.RawLen), true
}
