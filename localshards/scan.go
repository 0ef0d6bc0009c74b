package localshards

import (
	"errors"
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// This file turns the lean shard reader of xet/shard (ReadLayout, XorbScanner, ParseXorbBlock) into
// the cache's index arrays: keys go straight into them with no per-entry allocation, which is what
// lets a cache of 16 million chunks open in well under a second. Everything but the header, footer
// and xorb section is skipped: a wrong or corrupt byte there cannot produce a wrong answer, since
// every candidate is verified against the full chunk hash on a hit (chunks.go). Full validation of
// a shard that is about to be stored is shard.Parse.

// errFormat is matched by every error of a malformed shard file: such a file is set aside.
var errFormat = errors.New("malformed cached shard")

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errFormat, fmt.Sprintf(format, args...))
}

// asFormatErr marks an error of the shard reader as a malformed file.
func asFormatErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", errFormat, err)
}

// meta is what the cache knows of a shard file from its header and footer.
type meta struct {
	size     int64
	created  uint64 // Unix seconds
	expires  uint64 // Unix seconds; 0 = already expired
	key      hash.Hash
	xorbOff  int64 // xorb section: [xorbOff, xorbEnd), bookend included
	xorbEnd  int64
	maxChunk int // upper bound of the chunk entries in the xorb section
}

// minShardSize: header, file bookend, xorb bookend, footer.
const minShardSize = shard.MinSizeWithFooter

// parseMeta checks the header (first bytes of the file) and the footer (last bytes) of a cached
// shard of size bytes, and returns where its xorb section is.
func parseMeta(head, foot []byte, size int64) (meta, error) {
	if len(foot) > shard.FooterSize {
		foot = foot[len(foot)-shard.FooterSize:]
	}
	l, err := shard.ReadLayout(head, foot, size)
	if err != nil {
		return meta{}, asFormatErr(err)
	}
	return meta{size: size, created: l.Created, expires: l.Expires, key: l.Key,
		xorbOff: l.XorbOff, xorbEnd: l.XorbEnd, maxChunk: l.MaxChunks()}, nil
}

// xorbInfo locates one xorb of a cached shard: refs base..base+n-1 are its chunks.
type xorbInfo struct {
	hash  hash.Hash
	off   int64  // offset of its header in the shard file
	base  uint32 // ref of chunk 0
	n     uint32 // chunk count
	shard uint32 // index into view.shards
}

// scanXorbs walks a xorb section (sec, which starts at file offset secOff and ends with the bookend)
// and writes each chunk's truncated hash into keys and its ref (base + running count) into refs,
// both of length >= the number of chunk entries. It appends one xorbInfo per xorb (shard field
// set to sh) and returns the number of chunks written.
func scanXorbs(sec []byte, secOff int64, base uint32, sh uint32, keys []uint64, refs []uint32, xorbs []xorbInfo) (int, []xorbInfo, error) {
	n := 0
	sc := shard.NewXorbScanner(sec)
	for sc.Next() {
		b := sc.Block()
		xorbs = append(xorbs, xorbInfo{hash: b.Hash, off: secOff + int64(b.Off), base: base + uint32(n), n: b.N, shard: sh})
		k := keys[n : n+int(b.N)]
		r := refs[n : n+int(b.N)]
		ref := base + uint32(n)
		for i := range k {
			k[i] = b.ChunkKey(i)
			r[i] = ref + uint32(i)
		}
		n += int(b.N)
	}
	if err := sc.Err(); err != nil {
		return 0, xorbs, asFormatErr(err)
	}
	return n, xorbs, nil
}

// scanSection is scanXorbs for the section of the file name, shard or singles file.
func scanSection(name string, sec []byte, secOff int64, base uint32, sh uint32, keys []uint64, refs []uint32, xorbs []xorbInfo) (int, []xorbInfo, error) {
	if isSinglesName(name) {
		return scanSingles(sec, secOff, base, sh, keys, refs, xorbs)
	}
	return scanXorbs(sec, secOff, base, sh, keys, refs, xorbs)
}

// sectionListsAny reports whether the section of the file name, shard or singles file, lists one of
// the xorbs in set.
func sectionListsAny(name string, sec []byte, set map[hash.Hash]bool) bool {
	if isSinglesName(name) {
		return singlesListAny(sec, set)
	}
	return listsAny(sec, set)
}

// decodeXorb decodes a xorb block read from a shard file (header then n entries) after checking that
// it is the xorb the index expects.
func decodeXorb(b []byte, want hash.Hash, n uint32) ([]shard.XorbChunk, error) {
	blk, err := shard.ParseXorbBlock(b)
	if err != nil {
		return nil, asFormatErr(err)
	}
	if blk.Hash != want {
		return nil, formatErr("xorb header %s where %s was indexed", blk.Hash, want)
	}
	if blk.N != n {
		return nil, formatErr("xorb %s has %d chunks, %d were indexed", want, blk.N, n)
	}
	return blk.Chunks(), nil
}
