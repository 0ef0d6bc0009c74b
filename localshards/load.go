package localshards

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/internal/regfile"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

const (
	shardExt   = ".mdb"
	tempExt    = ".mdb_temp"
	corruptExt = ".corrupt"
	// staleTemp: a temp file older than this was left by a crashed writer.
	staleTemp = time.Hour
	// maxRefs bounds the ref space (u32).
	maxRefs = 1<<32 - 1
	// coarseMtime: directory mtimes may lag a rename by a clock tick, so a directory modified this
	// recently before the last listing is listed again even if its mtime did not move.
	coarseMtime = 2 * time.Second
)

// Load loads the index now (Lookup does it on first use): it lists the directory, deletes shards a
// week past expiry, prunes the oldest shards over the size limit, and indexes the rest.
func (c *Cache) Load() error {
	_, err := c.ready()
	return err
}

// ready returns the current view, loading it on first use.
func (c *Cache) ready() (*view, error) {
	if v := c.view.Load(); v != nil {
		return v, nil
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if v := c.view.Load(); v != nil {
		return v, nil
	}
	v, err := c.loadLocked()
	if err != nil {
		return nil, err
	}
	c.view.Store(v)
	c.nextCheck.Store(time.Now().Add(c.opts.RefreshInterval).UnixNano())
	return v, nil
}

// isShardName reports whether name is <64 lowercase hex>.mdb.
func isShardName(name string) bool {
	base, ok := strings.CutSuffix(name, shardExt)
	return ok && isHexName(base)
}

// isHexName reports whether base is 64 lowercase hex digits.
func isHexName(base string) bool {
	if len(base) != 64 {
		return false
	}
	for i := 0; i < len(base); i++ {
		ch := base[i]
		if (ch < '0' || ch > '9') && (ch < 'a' || ch > 'f') {
			return false
		}
	}
	return true
}

// candidate is a shard file found in a listing, with its header/footer facts.
type candidate struct {
	name   string
	m      meta
	start  uint64 // first ref (and position in the load arrays) of its chunks
	n      int    // chunks scanned
	xorbs  []xorbInfo
	err    error
	snap   int // index in the snapshot, or -1
	pruned bool
	// unindexed: a snapshot record of a live shard the entry cap left out
	unindexed bool
}

// list reads the directory and cleans up stale temp and corrupt files. It returns the names of the
// shard and singles files.
func (c *Cache) list() ([]string, time.Time, error) {
	st, err := os.Stat(c.dir)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("shard cache: %w", err)
	}
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("shard cache: %w", err)
	}
	var names []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case isShardName(name), isSinglesName(name):
			names = append(names, name)
		case strings.HasSuffix(name, tempExt) || strings.HasSuffix(name, corruptExt):
			keep := staleTemp
			if strings.HasSuffix(name, corruptExt) {
				keep = ExpiredGrace
			}
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > keep {
				_ = fsretry.Remove(filepath.Join(c.dir, name))
			}
		}
	}
	return names, st.ModTime(), nil
}

// openRegular opens the cache's file at path for reading, with its stat. A file that is not a
// regular one (a fifo, a device, a directory: the cache writes none, but a name in its listing may
// be one) is a format error, set aside like any malformed file: reading a fifo would wait forever
// for a writer, holding the writers' lock of every process of this cache.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, st, err := regfile.OpenStat(path, os.O_RDONLY)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, nil, formatErr("%v", err)
	}
	return f, st, err
}

// readMeta opens a shard file and parses its header and footer (a singles file: its head).
func (c *Cache) readMeta(name string) (meta, error) {
	f, st, err := openRegular(filepath.Join(c.dir, name))
	if err != nil {
		return meta{}, err
	}
	defer f.Close()
	size := st.Size()
	if isSinglesName(name) {
		var head [singlesHeadSize]byte
		if _, err := f.ReadAt(head[:], 0); err != nil {
			return meta{}, shortRead(err)
		}
		return parseSinglesHead(head[:], size)
	}
	if size < minShardSize {
		return meta{}, formatErr("%d bytes, shorter than the smallest shard with footer (%d)", size, minShardSize)
	}
	var head [shard.HeaderSize]byte
	var foot [shard.FooterSize]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return meta{}, shortRead(err)
	}
	if _, err := f.ReadAt(foot[:], size-shard.FooterSize); err != nil {
		return meta{}, shortRead(err)
	}
	return parseMeta(head[:], foot[:], size)
}

// shortRead turns an EOF (file shrank while read) into a format error.
func shortRead(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return formatErr("truncated while read: %v", err)
	}
	return err
}

// setAside renames a malformed shard file to <name>.corrupt so no process reads it again.
func (c *Cache) setAside(name string, why error) {
	p := filepath.Join(c.dir, name)
	err := fsretry.Rename(p, p+corruptExt)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		return // another process got there first
	}
	ev := c.log.Warn().Str("file", p).AnErr("reason", why)
	if err != nil {
		ev = ev.AnErr("rename", err)
	}
	ev.Msg("skipping malformed cached shard; set aside as .corrupt")
}

// classify reads the metas of names and sorts them into indexable candidates (see selectLive).
func (c *Cache) classify(names []string, prune bool) []*candidate {
	return c.selectLive(c.readMetas(names), prune)
}

// readMetas reads the metas of names. Malformed files are set aside and recorded in c.known as -1.
func (c *Cache) readMetas(names []string) []*candidate {
	var cands []*candidate
	for _, name := range names {
		m, err := c.readMeta(name)
		if err != nil {
			if errors.Is(err, errFormat) {
				c.setAside(name, err)
				c.known[name] = -1
			} else if !errors.Is(err, fs.ErrNotExist) {
				c.log.Warn().Err(err).Str("file", name).Msg("cannot read cached shard; skipped")
			}
			continue
		}
		cands = append(cands, &candidate{name: name, m: m, snap: -1})
	}
	return cands
}

// selectLive drops the expired candidates (recorded in c.known as -1) and returns the rest. With
// prune, files a week past expiry are deleted, and the oldest (footer CreatedAt) are deleted until the
// rest fit the size limit.
func (c *Cache) selectLive(all []*candidate, prune bool) []*candidate {
	var cands []*candidate
	var total int64
	for _, cd := range all {
		if !c.valid(cd.m.expires) {
			c.known[cd.name] = -1
			if prune && c.deletable(cd.m.expires) {
				c.log.Debug().Str("file", cd.name).Msg("deleting expired cached shard")
				_ = fsretry.Remove(filepath.Join(c.dir, cd.name))
			}
			continue
		}
		cands = append(cands, cd)
		total += cd.m.size
	}
	if prune && c.opts.SizeLimit > 0 && total > c.opts.SizeLimit {
		sorted := append([]*candidate(nil), cands...)
		sort.SliceStable(sorted, func(i, j int) bool {
			if sorted[i].m.created != sorted[j].m.created {
				return sorted[i].m.created < sorted[j].m.created
			}
			return sorted[i].name < sorted[j].name
		})
		for _, cd := range sorted {
			if total <= c.opts.SizeLimit {
				break
			}
			c.log.Debug().Str("file", cd.name).Msg("pruning cached shard over the size limit")
			_ = fsretry.Remove(filepath.Join(c.dir, cd.name))
			c.known[cd.name] = -1
			cd.pruned = true
			total -= cd.m.size
		}
		kept := cands[:0]
		for _, cd := range cands {
			if !cd.pruned {
				kept = append(kept, cd)
			}
		}
		cands = kept
	}
	return cands
}

// loadLocked builds the first view from the directory. c.mu is held.
func (c *Cache) loadLocked() (*view, error) {
	names, mtime, err := c.list()
	if err != nil {
		return nil, err
	}
	listed := time.Now()
	c.known = make(map[string]int32, len(names))
	names, singles := splitNames(names)
	v, ok := c.loadSnapshot(names)
	c.fromSnapshot = ok
	if !ok {
		clear(c.known)
		var skipped []*candidate
		v, skipped = c.buildFull(names)
		c.writeSnapshotAsync(v, skipped, listed)
	}
	// Singles files are scanned on every load, after the snapshot was taken of the shards alone.
	// The size limit prunes them among themselves.
	live := c.classify(singles, true)
	if len(live) > maxSinglesFiles {
		live = c.compactSingles(live)
	}
	if ps := c.scanNew(live); len(ps) > 0 {
		v = c.extendLocked(v, ps)
	}
	c.dirMtime, c.listedAt = mtime, listed
	return v, nil
}

// splitNames splits a listing into shard files and singles files.
func splitNames(names []string) (shards, singles []string) {
	for _, name := range names {
		if isSinglesName(name) {
			singles = append(singles, name)
		} else {
			shards = append(shards, name)
		}
	}
	return shards, singles
}

// buildFull indexes every live shard of names, reading their xorb sections on Options.Workers
// goroutines straight into the index arrays. c.mu is held.
// It also returns the live shards left out by the entry cap.
func (c *Cache) buildFull(names []string) (*view, []*candidate) {
	cands, skipped, upper := c.layOut(c.classify(names, true))
	keys := make([]uint64, upper)
	refs := make([]uint32, upper)
	c.scanAll(cands, keys, refs)
	v := &view{keys: []hash.Hash{hash.Zero}, hashers: []*keyedHasher{nil}}
	w := uint64(0) // compaction write position
	for _, cd := range cands {
		if cd.err != nil {
			if errors.Is(cd.err, errFormat) {
				c.setAside(cd.name, cd.err)
				c.known[cd.name] = -1
			} else if !errors.Is(cd.err, fs.ErrNotExist) {
				c.log.Warn().Err(cd.err).Str("file", cd.name).Msg("cannot read cached shard; skipped")
			}
			continue
		}
		si := c.addShard(v, cd.name, cd.m)
		for _, x := range cd.xorbs {
			x.shard = uint32(si)
			v.xorbs = append(v.xorbs, x)
		}
		if w != cd.start {
			copy(keys[w:], keys[cd.start:cd.start+uint64(cd.n)])
			copy(refs[w:], refs[cd.start:cd.start+uint64(cd.n)])
		}
		w += uint64(cd.n)
	}
	c.nextRef = upper
	v.segs = []*segment{buildSegment(keys[:w], refs[:w])}
	c.log.Debug().Int("shards", len(v.shards)).Uint64("chunks", w).Msg("shard cache index built from the shard files")
	return v, skipped
}

// layOut gives the candidates one ref space, each the upper bound of its chunk count (cd.start),
// and returns those that fit the entry cap, those left out and the space's size. Over the cap (or
// the ref space) the newest shards (footer CreatedAt) go first.
func (c *Cache) layOut(cands []*candidate) (fit, skipped []*candidate, upper uint64) {
	limit := min(uint64(c.opts.MaxEntries), maxRefs)
	var total uint64
	for _, cd := range cands {
		total += uint64(cd.m.maxChunk)
	}
	if total > limit {
		sort.SliceStable(cands, func(i, j int) bool { return cands[i].m.created > cands[j].m.created })
	}
	for i, cd := range cands {
		if upper+uint64(cd.m.maxChunk) > limit {
			c.log.Info().Int("skipped", len(cands)-i).Uint64("max_entries", limit).
				Msg("shard cache holds more chunks than the index may; the oldest shards are not indexed")
			for _, cd := range cands[i:] {
				c.known[cd.name] = -1 // not a new file for refresh either
			}
			return cands[:i], cands[i:], upper
		}
		cd.start = upper
		upper += uint64(cd.m.maxChunk)
	}
	return cands, nil, upper
}

// scanAll reads the candidates' xorb sections on Options.Workers goroutines, each with its own
// buffer, writing their keys and refs at cd.start (cd.n, cd.xorbs, cd.err set; shard indexes are
// fixed up by the caller).
func (c *Cache) scanAll(cands []*candidate, keys []uint64, refs []uint32) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < c.opts.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for {
				i := int(next.Add(1) - 1)
				if i >= len(cands) {
					return
				}
				cd := cands[i]
				buf, cd.err = c.readSection(cd, buf)
				if cd.err != nil {
					continue
				}
				end := cd.start + uint64(cd.m.maxChunk)
				cd.n, cd.xorbs, cd.err = scanSection(cd.name, buf, cd.m.xorbOff, uint32(cd.start), 0, keys[cd.start:end], refs[cd.start:end], nil)
			}
		}()
	}
	wg.Wait()
}

// readSection reads the xorb section of cd's file into buf (grown as needed).
func (c *Cache) readSection(cd *candidate, buf []byte) ([]byte, error) {
	f, st, err := openRegular(filepath.Join(c.dir, cd.name))
	if err != nil {
		return buf, err
	}
	defer f.Close()
	if st.Size() != cd.m.size {
		return buf, formatErr("size changed from %d to %d while loading", cd.m.size, st.Size())
	}
	n := int(cd.m.xorbEnd - cd.m.xorbOff)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := f.ReadAt(buf, cd.m.xorbOff); err != nil {
		return buf, shortRead(err)
	}
	return buf, nil
}

// addShard appends a shardInfo (and its HMAC key) to v, records it in c.known, and returns its index.
func (c *Cache) addShard(v *view, name string, m meta) int {
	keyID := 0
	if !m.key.IsZero() {
		keyID = -1
		for i, k := range v.keys {
			if k == m.key {
				keyID = i
				break
			}
		}
		if keyID < 0 {
			keyID = len(v.keys)
			v.keys = append(v.keys, m.key)
			v.hashers = append(v.hashers, newKeyedHasher(m.key))
		}
	}
	si := len(v.shards)
	v.shards = append(v.shards, &shardInfo{name: name, size: m.size, created: m.created, expires: m.expires, keyID: keyID})
	c.known[name] = int32(si)
	return si
}
