package localshards

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// The index snapshot: the chunk index of a full build, persisted beside the shards
// (shard-cache/chunk-index.v1, a name xet-core ignores) so that the next process loads 12 bytes per
// chunk in one read instead of reading and re-sorting every shard's 48-byte entries. It is only a
// cache of the index: the shard files stay the truth. On load the snapshot's shard list is checked
// against the directory (missing or resized files are dropped, new files are scanned into a small
// segment), and every hit is still verified against the shard file, so a stale or damaged snapshot
// can cost dedupe matches but never give a wrong answer. A CRC-32C over the whole file catches
// damage; any mismatch means a full rebuild.
//
// Layout (little-endian): magic[8]; u64 shards, xorbs, entries, buckets, slots, next ref; per shard
// {name hash raw[32], size, created, expires, flags u64, key[32]} (flag 1: left out by the entry
// cap, listed so that later loads do not take it for a new file); per xorb {hash[32], off u64, base, n,
// shard, 0 u32}; the segment's slot keys (u64 each) and refs (u32 each); CRC-32C u32.

const (
	snapshotName   = "chunk-index.v1"
	snapshotMagic  = "XGTIDX03"
	snapHeaderSize = 8 + 6*8
	snapShardSize  = 32 + 4*8 + 32
	snapXorbSize   = 32 + 8 + 4*4
	// rebuildFraction: a snapshot is rebuilt when dropped plus new entries exceed 1/rebuildFraction
	// of it.
	rebuildFraction = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// littleEndian: the snapshot's arrays are read and written in place, so only little-endian machines
// use it (others always rebuild).
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// le is the byte order of the snapshot file (this package's own format).
var le = binary.LittleEndian

func asBytes[T uint32 | uint64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

type snapshot struct {
	shards  []*candidate // m.size, created, expires, key; name
	xorbs   []xorbInfo
	seg     *segment
	nextRef uint64
}

// writeSnapshotAsync persists v (one segment, fresh from a full build started at since) on a
// goroutine; Close waits. When several processes rebuild at once, one that finds a snapshot written
// after its own build started leaves it alone.
func (c *Cache) writeSnapshotAsync(v *view, skipped []*candidate, since time.Time) {
	if !littleEndian || len(v.segs) != 1 {
		return
	}
	nextRef := c.nextRef
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		if st, err := os.Stat(filepath.Join(c.dir, snapshotName)); err == nil && st.ModTime().After(since) {
			return
		}
		start := time.Now()
		if err := writeSnapshot(c.dir, v, skipped, nextRef); err != nil {
			c.log.Warn().Err(err).Msg("cannot write the shard cache index snapshot")
			return
		}
		c.log.Debug().Dur("took", time.Since(start)).Msg("shard cache index snapshot written")
	}()
}

func writeSnapshot(dir string, v *view, skipped []*candidate, nextRef uint64) error {
	parts, err := encodeSnapshot(v, skipped, nextRef)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".chunk-index-*"+tempExt)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err = tmp.Write(p); err != nil {
			break
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsretry.Rename(tmp.Name(), filepath.Join(dir, snapshotName))
	}
	if err != nil {
		_ = fsretry.Remove(tmp.Name())
	}
	return err
}

// encodeSnapshot lays out the snapshot of v (its one segment), the shards skipped as unindexed and
// nextRef: the header with the shard and xorb tables, the segment's keys and refs, and the CRC of
// them all, in the order they are written.
func encodeSnapshot(v *view, skipped []*candidate, nextRef uint64) ([][]byte, error) {
	seg := v.segs[0]
	nShards := len(v.shards) + len(skipped)
	head := make([]byte, 0, snapHeaderSize+nShards*snapShardSize+len(v.xorbs)*snapXorbSize)
	head = append(head, snapshotMagic...)
	for _, x := range []uint64{uint64(nShards), uint64(len(v.xorbs)), uint64(seg.n), seg.nb, uint64(len(seg.keys)), nextRef} {
		head = le.AppendUint64(head, x)
	}
	var err error
	for _, s := range v.shards {
		if head, err = appendSnapShard(head, s.name, s.size, s.created, s.expires, 0, v.keys[s.keyID]); err != nil {
			return nil, err
		}
	}
	for _, cd := range skipped {
		if head, err = appendSnapShard(head, cd.name, cd.m.size, cd.m.created, cd.m.expires, 1, cd.m.key); err != nil {
			return nil, err
		}
	}
	for _, x := range v.xorbs {
		head = append(head, x.hash[:]...)
		head = le.AppendUint64(head, uint64(x.off))
		head = le.AppendUint32(head, x.base)
		head = le.AppendUint32(head, x.n)
		head = le.AppendUint32(head, x.shard)
		head = le.AppendUint32(head, 0)
	}
	parts := [][]byte{head, asBytes(seg.keys), asBytes(seg.refs)}
	var crc uint32
	for _, p := range parts {
		crc = crc32.Update(crc, castagnoli, p)
	}
	return append(parts, le.AppendUint32(nil, crc)), nil
}

// appendSnapShard appends a shard's entry of the snapshot's shard table to head.
func appendSnapShard(head []byte, name string, size int64, created, expires, flags uint64, key hash.Hash) ([]byte, error) {
	raw, err := hex.DecodeString(strings.TrimSuffix(name, shardExt))
	if err != nil || len(raw) != 32 {
		return head, fmt.Errorf("snapshot: shard name %q: %v", name, err)
	}
	head = append(head, raw...)
	head = le.AppendUint64(head, uint64(size))
	head = le.AppendUint64(head, created)
	head = le.AppendUint64(head, expires)
	head = le.AppendUint64(head, flags)
	return append(head, key[:]...), nil
}

// readSnapshot reads and checks the snapshot file.
func readSnapshot(path string) (*snapshot, error) {
	f, st, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseSnapshot(f, st.Size())
}

// parseSnapshot reads a snapshot of size bytes from r. Every allocation is bounded by size.
func parseSnapshot(f io.ReaderAt, size int64) (*snapshot, error) {
	var h [snapHeaderSize]byte
	if size < snapHeaderSize+4 {
		return nil, errors.New("snapshot too short")
	}
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return nil, err
	}
	if string(h[:8]) != snapshotMagic {
		return nil, errors.New("snapshot magic")
	}
	nShards, nXorbs, n, nb, slots, nextRef := le.Uint64(h[8:]), le.Uint64(h[16:]), le.Uint64(h[24:]), le.Uint64(h[32:]), le.Uint64(h[40:]), le.Uint64(h[48:])
	if nShards > uint64(size) || nXorbs > uint64(size) || slots > uint64(size) || n > slots ||
		nb == 0 || nb >= 1<<31 || nb*slotsPerBucket > slots || nextRef > maxRefs {
		return nil, errors.New("snapshot counts out of range")
	}
	metaLen := nShards*snapShardSize + nXorbs*snapXorbSize
	if snapHeaderSize+metaLen+slots*12+4 != uint64(size) {
		return nil, fmt.Errorf("snapshot of %d bytes does not match its counts", size)
	}
	meta := make([]byte, metaLen)
	seg := &segment{nb: nb, n: int(n), keys: make([]uint64, slots), refs: make([]uint32, slots)}
	adviseHuge(seg.keys)
	adviseHuge(seg.refs)
	off := int64(snapHeaderSize)
	crc := crc32.Update(0, castagnoli, h[:])
	for _, p := range [][]byte{meta, asBytes(seg.keys), asBytes(seg.refs)} {
		if _, err := f.ReadAt(p, off); err != nil {
			return nil, err
		}
		crc = crc32.Update(crc, castagnoli, p)
		off += int64(len(p))
	}
	var tail [4]byte
	if _, err := f.ReadAt(tail[:], off); err != nil {
		return nil, err
	}
	if le.Uint32(tail[:]) != crc {
		return nil, errors.New("snapshot checksum mismatch")
	}
	seg.filter = buildFilter(seg)
	s := &snapshot{seg: seg, nextRef: nextRef}
	if err := s.decodeTables(meta, nShards, nXorbs); err != nil {
		return nil, err
	}
	return s, nil
}

// decodeTables reads the snapshot's shard and xorb tables from meta (their sizes were checked),
// checking each xorb against its shard and the refs before it.
func (s *snapshot) decodeTables(meta []byte, nShards, nXorbs uint64) error {
	p := meta
	for i := uint64(0); i < nShards; i++ {
		cd := &candidate{name: hex.EncodeToString(p[:32]) + shardExt, snap: int(i)}
		cd.m.size = int64(le.Uint64(p[32:]))
		cd.m.created, cd.m.expires = le.Uint64(p[40:]), le.Uint64(p[48:])
		cd.unindexed = le.Uint64(p[56:])&1 != 0
		copy(cd.m.key[:], p[64:96])
		s.shards = append(s.shards, cd)
		p = p[snapShardSize:]
	}
	var prevBase uint32
	for i := uint64(0); i < nXorbs; i++ {
		x := xorbInfo{hash: hash.Hash(p[:32]), off: int64(le.Uint64(p[32:])), base: le.Uint32(p[40:]), n: le.Uint32(p[44:]), shard: le.Uint32(p[48:])}
		if uint64(x.shard) >= nShards || x.off < 0 || x.base < prevBase || uint64(x.base)+uint64(x.n) > s.nextRef ||
			uint64(x.off)+(uint64(x.n)+1)*48 > uint64(s.shards[x.shard].m.size) {
			return errors.New("snapshot xorb table inconsistent")
		}
		prevBase = x.base
		s.xorbs = append(s.xorbs, x)
		p = p[snapXorbSize:]
	}
	return nil
}

// loadSnapshot builds the first view from the snapshot plus the shards added since. ok is false when
// there is no usable snapshot or it is too stale (then the caller does a full build). c.mu is held.
func (c *Cache) loadSnapshot(names []string) (*view, bool) {
	if !littleEndian {
		return nil, false
	}
	snap, err := readSnapshot(filepath.Join(c.dir, snapshotName))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.log.Debug().Err(err).Msg("shard cache index snapshot unusable; rebuilding")
		}
		return nil, false
	}
	v := c.snapshotView(snap)
	live := c.selectLive(c.snapshotCandidates(snap, names), true)
	newCands, ok := c.reviveLive(v, snap, live)
	if !ok {
		return nil, false
	}
	c.nextRef = snap.nextRef
	ps := c.scanNew(newCands)
	if len(ps) > 0 {
		v = c.extendLocked(v, ps)
	}
	c.log.Debug().Int("shards", len(live)).Int("new", len(ps)).Msg("shard cache index loaded from snapshot")
	return v, true
}

// snapshotView registers every snapshot shard in a new view (indices must match the xorb table),
// dead until the listing shows its file.
func (c *Cache) snapshotView(snap *snapshot) *view {
	v := &view{keys: []hash.Hash{hash.Zero}, hashers: []*keyedHasher{nil}, xorbs: snap.xorbs, segs: []*segment{snap.seg}}
	for _, cd := range snap.shards {
		si := c.addShard(v, cd.name, cd.m)
		v.shards[si].dead.Store(true)
		delete(c.known, cd.name)
	}
	return v
}

// snapshotCandidates returns the candidates among the listed names: the snapshot's, when the file
// is still the one it indexed, and the headers of the others (malformed new files are set aside).
func (c *Cache) snapshotCandidates(snap *snapshot, names []string) []*candidate {
	byName := make(map[string]*candidate, len(snap.shards))
	for _, cd := range snap.shards {
		byName[cd.name] = cd
	}
	var all []*candidate
	var fresh []string
	for _, name := range names {
		cd, ok := byName[name]
		if !ok {
			fresh = append(fresh, name)
			continue
		}
		st, err := os.Stat(filepath.Join(c.dir, name))
		if err != nil {
			continue
		}
		if st.Size() != cd.m.size {
			fresh = append(fresh, name) // not the file the snapshot indexed
			continue
		}
		all = append(all, cd)
	}
	return append(all, c.readMetas(fresh)...)
}

// reviveLive marks the live snapshot shards alive in v and returns the live shards the snapshot
// does not hold; ok is false when those and the dead entries make the snapshot too stale to use.
func (c *Cache) reviveLive(v *view, snap *snapshot, live []*candidate) (newCands []*candidate, ok bool) {
	var liveEntries, freshEntries int
	perShard := make([]int, len(snap.shards))
	for _, x := range snap.xorbs {
		perShard[x.shard] += int(x.n)
	}
	for _, cd := range live {
		switch {
		case cd.unindexed:
			c.known[cd.name] = -1 // still left out (no entries of it in the table)
		case cd.snap >= 0:
			v.shards[cd.snap].dead.Store(false)
			c.known[cd.name] = int32(cd.snap)
			liveEntries += perShard[cd.snap]
		default:
			newCands = append(newCands, cd)
			freshEntries += cd.m.maxChunk
		}
	}
	stale := (snap.seg.len() - liveEntries) + freshEntries
	if stale > snap.seg.len()/rebuildFraction+1<<16 {
		c.log.Debug().Int("stale", stale).Int("entries", snap.seg.len()).Msg("shard cache index snapshot too stale; rebuilding")
		return nil, false
	}
	return newCands, true
}

// scanNew reads the xorb sections of shards the index does not hold yet (the snapshot's, or the
// view a refresh extends); malformed ones are set aside, unreadable ones skipped (a shard removed
// meanwhile without a word).
func (c *Cache) scanNew(cands []*candidate) []*pending {
	var ps []*pending
	var buf []byte
	for _, cd := range cands {
		var p *pending
		var err error
		buf, err = c.readSection(cd, buf)
		if err == nil {
			p, err = scanPending(cd.name, cd.m, buf)
		}
		if err != nil {
			if errors.Is(err, errFormat) {
				c.setAside(cd.name, err)
				c.known[cd.name] = -1
			} else if !errors.Is(err, fs.ErrNotExist) {
				c.log.Warn().Err(err).Str("file", cd.name).Msg("cannot read cached shard; skipped")
			}
			continue
		}
		ps = append(ps, p)
	}
	return ps
}
