package localshards

import (
	"hash/crc32"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
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
// Forget, set-aside when malformed) through readMeta, scanSection, xorbChunks and sectionListsAny, but never
// enter the index snapshot: every load scans them (40 bytes per chunk, what a snapshot record of
// the same xorb would cost), so the snapshot holds no copy of them. Each agent process writes one
// per run; past maxSinglesFiles a load merges them (compactSingles).
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
	recs, err := singlesRecords(sec)
	if err != nil {
		return 0, xorbs, err
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

// maxSinglesFiles: a load that finds more live singles files than this merges those that expire on
// the same day, so that the number of files every load opens stays bounded (about one per day of
// OwnShardLifetime) however many agent processes wrote one.
const maxSinglesFiles = 64

// compactLockName is the file whose flock lets one process at a time compact singles files.
const compactLockName = "compact.lock"

// compactSingles merges the singles files of cands (live, listed by this load) that expire on the
// same UTC day into one file each, created at the newest and expiring at the earliest of the group,
// so that no record outlives the file it came from. The inputs are removed once the merged file is
// durable. It returns the candidates to index: the merged files and the ones left alone (on any
// error the inputs stay and are indexed as they are).
//
// One process compacts at a time (lockCompaction); one that finds the lock taken indexes cands as
// they are, and an input removed under it costs it a miss, never a wrong answer. The holder lists
// the directory again first: a listing from before another process's compaction would merge the
// inputs that process had not removed yet into a second, smaller file beside its merged one.
func (c *Cache) compactSingles(cands []*candidate) []*candidate {
	unlock, ok := lockCompaction(c.dir)
	if !ok {
		return cands
	}
	defer unlock()
	names, _, err := c.list()
	if err != nil {
		return cands
	}
	_, singles := splitNames(names)
	if cands = c.classify(singles, true); len(cands) <= maxSinglesFiles {
		return cands
	}
	groups := map[uint64][]*candidate{}
	var days []uint64
	for _, cd := range cands {
		d := cd.m.expires / 86400
		if groups[d] == nil {
			days = append(days, d)
		}
		groups[d] = append(groups[d], cd)
	}
	var out []*candidate
	for _, d := range days {
		g := groups[d]
		if len(g) < 2 {
			out = append(out, g...)
			continue
		}
		merged, err := c.mergeSingles(g)
		if err != nil {
			c.log.Debug().Err(err).Int("files", len(g)).Msg("shard cache: singles files not merged")
			out = append(out, g...)
			continue
		}
		out = append(out, merged)
	}
	return out
}

// mergeSingles writes the records of the singles files g as one file and removes g.
func (c *Cache) mergeSingles(g []*candidate) (*candidate, error) {
	var xs []shard.Xorb
	created, expires := uint64(0), ^uint64(0)
	var buf []byte
	for _, cd := range g {
		var err error
		if buf, err = c.readSection(cd, buf); err != nil {
			return nil, err
		}
		recs, err := singlesRecords(buf)
		if err != nil {
			return nil, err
		}
		for i := 0; i < len(recs); i += singleSize {
			h := hash.Hash(recs[i : i+32])
			ch, err := decodeSingle(recs[i:i+singleSize], h)
			if err != nil {
				return nil, err
			}
			xs = append(xs, shard.Xorb{Hash: h, Chunks: ch})
		}
		created, expires = max(created, cd.m.created), min(expires, cd.m.expires)
	}
	data := marshalSingles(xs, created, expires)
	m, err := parseSinglesHead(data, int64(len(data)))
	if err != nil {
		return nil, err
	}
	name := hash.Chunk(data).String() + singlesExt
	if err := writeAtomic(c.dir, name, data); err != nil {
		return nil, err
	}
	for _, cd := range g {
		if cd.name != name {
			_ = fsretry.Remove(filepath.Join(c.dir, cd.name))
		}
	}
	c.log.Debug().Int("files", len(g)).Int("records", m.maxChunk).Msg("shard cache: singles files merged")
	return &candidate{name: name, m: m, snap: -1}, nil
}

// singlesRecords checks a singles section (records then CRC) and returns its records.
func singlesRecords(sec []byte) ([]byte, error) {
	if len(sec) < 4 || (len(sec)-4)%singleSize != 0 {
		return nil, formatErr("singles file: section of %d bytes", len(sec))
	}
	recs := sec[:len(sec)-4]
	if crc32.Checksum(recs, castagnoli) != le.Uint32(sec[len(recs):]) {
		return nil, formatErr("singles file: CRC mismatch")
	}
	return recs, nil
}
