package localshards

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// AddOwn stores a shard of our own upload, after the CAS accepted it, in the local form (lookup
// tables and footer, created now, expiring in OwnShardLifetime), and indexes it at once when the
// index is loaded. s is only read.
func (c *Cache) AddOwn(s *shard.Shard) error {
	if s == nil {
		return errors.New("shard cache: AddOwn of a nil shard")
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if lim := c.opts.MergeOwnBytes; lim > 0 && s.SectionsSize() < lim/mergeSmallFraction {
		if c.own.add(s, lim) {
			return c.Flush()
		}
		return nil
	}
	return c.writeOwn(s)
}

// mergeSmallFraction: an own shard smaller than Options.MergeOwnBytes / this is buffered (the agent's
// 4 MiB: shards under 64 KiB, files of up to about 1,000 chunks); bigger ones are written at once, so
// that a killed process loses no cache entry that a large upload's next version would dedupe against.
const mergeSmallFraction = 64

// writeOwn writes an own shard in the local form and indexes it.
func (c *Cache) writeOwn(s *shard.Shard) error {
	created, expires := c.ownLifetime()
	return c.add(s.AppendLocal(nil, created, expires), "own shard")
}

// ownLifetime returns the created and expires times (Unix seconds) of an own file written now.
func (c *Cache) ownLifetime() (created, expires uint64) {
	now := c.now()
	return uint64(max(now.Unix(), 0)), uint64(max(now.Add(OwnShardLifetime).Unix(), 0))
}

// AddDedupe stores a global-dedupe answer byte for byte (it must be a well-formed shard with a
// footer; its expiry is the server's) and indexes it at once when the index is loaded. An answer
// that has already expired is not stored.
func (c *Cache) AddDedupe(data []byte) error {
	p, err := shard.Parse(data)
	if err != nil {
		return fmt.Errorf("shard cache: global-dedupe answer: %w", err)
	}
	if p.Footer == nil {
		return errors.New("shard cache: global-dedupe answer has no footer (no expiry), not cached")
	}
	if !c.valid(p.Footer.ExpiresAt) {
		c.log.Debug().Uint64("expires", p.Footer.ExpiresAt).Msg("global-dedupe answer already expired; not cached")
		return nil
	}
	return c.add(data, "global-dedupe answer")
}

// pending is a shard scanned and ready to join the index: refs and xorb bases count from 0.
type pending struct {
	name  string
	m     meta
	keys  []uint64
	refs  []uint32
	xorbs []xorbInfo
}

// scanPending scans a shard's xorb section (sec) into fresh arrays.
func scanPending(name string, m meta, sec []byte) (*pending, error) {
	p := &pending{name: name, m: m, keys: make([]uint64, m.maxChunk), refs: make([]uint32, m.maxChunk)}
	n, xorbs, err := scanSection(name, sec, m.xorbOff, 0, 0, p.keys, p.refs, nil)
	if err != nil {
		return nil, err
	}
	p.keys, p.refs, p.xorbs = p.keys[:n:n], p.refs[:n:n], xorbs
	return p, nil
}

// add validates a shard (data) with the cache's own reader, writes it under its content name, and
// indexes it.
func (c *Cache) add(data []byte, what string) error {
	size := int64(len(data))
	if size < minShardSize {
		return fmt.Errorf("shard cache: %s: %w", what, formatErr("%d bytes, too short for a shard with footer", size))
	}
	m, err := parseMeta(data[:shard.HeaderSize], data[size-shard.FooterSize:], size)
	if err != nil {
		return fmt.Errorf("shard cache: %s: %w", what, err)
	}
	return c.addFile(shardFileName(data), m, data, what)
}

// writeSingles writes the one-chunk xorbs xs of our own uploads as a singles file and indexes it.
func (c *Cache) writeSingles(xs []shard.Xorb) error {
	created, expires := c.ownLifetime()
	data := marshalSingles(xs, created, expires)
	m, err := parseSinglesHead(data, int64(len(data)))
	if err != nil {
		return fmt.Errorf("shard cache: singles: %w", err)
	}
	return c.addFile(hash.Chunk(data).String()+singlesExt, m, data, "singles")
}

// addFile scans data (the file name, with meta m), writes it and indexes it.
func (c *Cache) addFile(name string, m meta, data []byte, what string) error {
	if c.closed.Load() {
		return ErrClosed
	}
	p, err := scanPending(name, m, data[m.xorbOff:m.xorbEnd])
	if err != nil {
		return fmt.Errorf("shard cache: %s: %w", what, err)
	}
	if err := writeAtomic(c.dir, name, data); err != nil {
		return fmt.Errorf("shard cache: storing %s: %w", what, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.view.Load()
	if v == nil {
		return nil // not loaded yet: the first load lists the file
	}
	if _, ok := c.known[name]; ok {
		return nil
	}
	c.view.Store(c.extendLocked(v, []*pending{p}))
	return nil
}

// shardFileName is xet-core's name for a shard file: the chunk hash of its bytes, ".mdb".
func shardFileName(data []byte) string { return hash.Chunk(data).String() + shardExt }

// writeAtomic writes data to dir/name through a temp file and a rename, so readers see the whole file
// or none. A file already there under that (content-derived) name with the same size is kept.
func writeAtomic(dir, name string, data []byte) error {
	final := filepath.Join(dir, name)
	if st, err := os.Stat(final); err == nil && st.Size() == int64(len(data)) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var rnd [12]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+hex.EncodeToString(rnd[:])+tempExt)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsretry.Rename(tmp, final)
	}
	if err != nil {
		_ = fsretry.Remove(tmp)
		return err
	}
	return nil
}

// Merge policy for the small segments added after the first load.
const (
	maxSegments  = 32
	minMergeSize = 1 << 20
)

// extendLocked returns a new view with the pending shards added as one more segment (merging all
// segments when the small ones grow too many or too large). c.mu is held.
func (c *Cache) extendLocked(v *view, ps []*pending) *view {
	nv := &view{
		segs:    v.segs,
		small:   v.small,
		xorbs:   v.xorbs,
		shards:  v.shards,
		keys:    v.keys,
		hashers: v.hashers,
	}
	var keys []uint64
	var refs []uint32
	for _, p := range ps {
		if _, ok := c.known[p.name]; ok {
			continue
		}
		n := uint64(len(p.keys))
		if c.nextRef+n > maxRefs {
			c.log.Warn().Str("file", p.name).Msg("shard cache index is full; shard not indexed")
			c.known[p.name] = -1
			continue
		}
		base := uint32(c.nextRef)
		si := c.addShard(nv, p.name, p.m)
		for _, x := range p.xorbs {
			x.base += base
			x.shard = uint32(si)
			nv.xorbs = append(nv.xorbs, x)
		}
		for _, r := range p.refs {
			refs = append(refs, r+base)
		}
		keys = append(keys, p.keys...)
		c.nextRef += n
	}
	if len(keys) == 0 {
		return nv
	}
	seg := buildSegment(keys, refs)
	nv.segs = append(nv.segs[:len(nv.segs):len(nv.segs)], seg)
	nv.small += seg.len()
	base := 0
	if len(nv.segs) > 0 {
		base = nv.segs[0].len()
	}
	if len(nv.segs)-1 > maxSegments || nv.small > max(base/2, minMergeSize) {
		nv.segs = []*segment{mergeSegments(nv.segs)}
		nv.small = 0
	}
	return nv
}

// mergeSegments builds one segment holding every entry of segs.
func mergeSegments(segs []*segment) *segment {
	n := 0
	for _, s := range segs {
		n += s.len()
	}
	keys := make([]uint64, 0, n)
	refs := make([]uint32, 0, n)
	for _, s := range segs {
		for i, r := range s.refs {
			if r != noRef {
				keys = append(keys, s.keys[i])
				refs = append(refs, r)
			}
		}
	}
	return buildSegment(keys, refs)
}
