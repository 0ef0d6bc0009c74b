package localshards

import (
	"hash/crc32"
	"slices"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// A singles file holds the one-chunk xorbs of merged small uploads in this package's own layout
// (shard-cache/<hash>.singles, a name xet-core ignores; hash = hash.Chunk(file bytes)). A small
// file is one chunk, and its xorb's hash is that chunk's hash (a one-entry merkle tree is its
// entry), so a chunk entry needs only the hash, the length and the flags: 40 bytes, where the same
// xorb in a shard takes 96 bytes of xorb section and 28 of lookup tables. The cache answers chunks
// only, so nothing else of the upload is kept (see ownBuffer).
//
// Layout (little-endian): magic[8]; u64 created, expires (Unix seconds), count; count records
// {hash[32], raw length u32, flags u32}, ascending by hash; CRC-32C u32 of the records.
//
// Singles files take part in everything shard files do (listing, expiry, the size limit, refresh,
// Forget, set-aside when malformed) through meta, scanSection, xorbChunks and listsAny, but never
// enter the index snapshot: every load scans them (40 bytes per chunk, what a snapshot record of
// the same xorb would cost), so the snapshot holds no copy of them.
const (
	singlesExt      = ".singles"
	singlesMagic    = "XGTONE01"
	singlesHeadSize = 8 + 3*8
	singleSize      = 32 + 4 + 4
	// maxSingleLen bounds a record's raw length: the largest chunk xet-core's chunker cuts.
	maxSingleLen = 128 << 10
)

// isSinglesName reports whether name is <64 lowercase hex>.singles.
func isSinglesName(name string) bool {
	base, ok := strings.CutSuffix(name, singlesExt)
	return ok && isHexName(base)
}

// isSingle reports whether x can be kept as a singles record: one chunk, which is the whole xorb.
func isSingle(x *shard.Xorb) bool {
	return len(x.Chunks) == 1 && x.Chunks[0].Hash == x.Hash && x.Chunks[0].RawStart == 0 &&
		x.Chunks[0].RawLen > 0 && x.Chunks[0].RawLen <= maxSingleLen
}

// splitSingles moves the xorbs of s that isSingle accepts out of s and returns them.
func splitSingles(s *shard.Shard) []shard.Xorb {
	var singles []shard.Xorb
	rest := s.Xorbs[:0]
	for _, x := range s.Xorbs {
		if isSingle(&x) {
			singles = append(singles, x)
		} else {
			rest = append(rest, x)
		}
	}
	s.Xorbs = rest
	return singles
}

// marshalSingles lays out a singles file of xs (every one isSingle), sorted by hash.
func marshalSingles(xs []shard.Xorb, created, expires uint64) []byte {
	slices.SortFunc(xs, func(a, b shard.Xorb) int { return a.Hash.Compare(b.Hash) })
	xs = slices.CompactFunc(xs, func(a, b shard.Xorb) bool { return a.Hash == b.Hash })
	b := make([]byte, 0, singlesHeadSize+len(xs)*singleSize+4)
	b = append(b, singlesMagic...)
	b = le.AppendUint64(b, created)
	b = le.AppendUint64(b, expires)
	b = le.AppendUint64(b, uint64(len(xs)))
	for _, x := range xs {
		b = append(b, x.Hash[:]...)
		b = le.AppendUint32(b, x.Chunks[0].RawLen)
		b = le.AppendUint32(b, x.Chunks[0].Flags)
	}
	return le.AppendUint32(b, crc32.Checksum(b[singlesHeadSize:], castagnoli))
}

// parseSinglesHead checks the head of a singles file of size bytes and returns its meta: the
// section is the records and the CRC.
func parseSinglesHead(head []byte, size int64) (meta, error) {
	if len(head) < singlesHeadSize || string(head[:8]) != singlesMagic {
		return meta{}, formatErr("singles file: bad magic")
	}
	created, expires, count := le.Uint64(head[8:]), le.Uint64(head[16:]), le.Uint64(head[24:])
	if count > uint64(size)/singleSize || singlesHeadSize+int64(count)*singleSize+4 != size {
		return meta{}, formatErr("singles file: %d records do not fill %d bytes", count, size)
	}
	return meta{size: size, created: created, expires: expires, xorbOff: singlesHeadSize, xorbEnd: size,
		maxChunk: int(count)}, nil
}

// scanSingles is scanXorbs for the section of a singles file (records then CRC): each record is one
// xorb of one chunk.
func scanSingles(sec []byte, secOff int64, base uint32, sh uint32, keys []uint64, refs []uint32, xorbs []xorbInfo) (int, []xorbInfo, error) {
	if len(sec) < 4 || (len(sec)-4)%singleSize != 0 {
		return 0, xorbs, formatErr("singles file: section of %d bytes", len(sec))
	}
	recs := sec[:len(sec)-4]
	if crc32.Checksum(recs, castagnoli) != le.Uint32(sec[len(recs):]) {
		return 0, xorbs, formatErr("singles file: CRC mismatch")
	}
	n := len(recs) / singleSize
	if len(keys) < n || len(refs) < n {
		return 0, xorbs, formatErr("singles file: %d records, room for %d", n, len(keys))
	}
	for i := 0; i < n; i++ {
		r := recs[i*singleSize:]
		h := hash.Hash(r[:32])
		xorbs = append(xorbs, xorbInfo{hash: h, off: secOff + int64(i*singleSize), base: base + uint32(i), n: 1, shard: sh})
		keys[i] = h.Truncate()
		refs[i] = base + uint32(i)
	}
	return n, xorbs, nil
}

// decodeSingle decodes a record read from a singles file after checking that it is the xorb the
// index expects.
func decodeSingle(r []byte, want hash.Hash) ([]shard.XorbChunk, error) {
	if len(r) != singleSize {
		return nil, formatErr("singles record of %d bytes", len(r))
	}
	h := hash.Hash(r[:32])
	if h != want {
		return nil, formatErr("singles record %s where %s was indexed", h, want)
	}
	n := le.Uint32(r[32:])
	if n == 0 || n > maxSingleLen {
		return nil, formatErr("singles record %s: raw length %d", h, n)
	}
	return []shard.XorbChunk{{Hash: h, RawLen: n, Flags: le.Uint32(r[36:])}}, nil
}

// singlesListAny reports whether a singles section lists one of the xorbs in set.
func singlesListAny(sec []byte, set map[hash.Hash]bool) bool {
	for i := 0; i+singleSize <= len(sec)-4; i += singleSize {
		if set[hash.Hash(sec[i:i+32])] {
			return true
		}
	}
	return false
}
