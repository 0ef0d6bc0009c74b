package localshards

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// Forget removes from the cache every shard (and singles file) that lists one of xorbs, because
// the CAS said it does not hold them (the remote was recreated, or its data restored from an older
// backup): no process dedupes against them again once it reloads, and this one stops at once. It
// returns the number of files removed. The shards merged in memory are written out first, so they are
// looked at too. This process's Lookup answers misses from then on (its index still lists the
// removed shards; agent processes are short-lived, and the next one loads without them).
//
// Concurrency: safe with other processes using the cache (a shard another process removed first
// is skipped; one that process reads while it goes is a miss there).
func (c *Cache) Forget(xorbs []hash.Hash) (int, error) {
	if len(xorbs) == 0 {
		return 0, nil
	}
	if err := c.Flush(); err != nil {
		return 0, err
	}
	gone := make(map[hash.Hash]bool, len(xorbs))
	for _, x := range xorbs {
		gone[x] = true
	}
	names, _, err := c.list()
	if err != nil {
		return 0, err
	}
	removed := 0
	var buf []byte
	for _, name := range names {
		m, err := c.readMeta(name)
		if err != nil {
			continue // malformed or gone: the loader deals with it
		}
		cd := &candidate{name: name, m: m}
		if buf, err = c.readSection(cd, buf); err != nil {
			continue
		}
		if !sectionListsAny(name, buf, gone) {
			continue
		}
		if err := fsretry.Remove(filepath.Join(c.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		removed++
	}
	c.stale.Store(true)
	c.log.Warn().Int("shards", removed).Int("xorbs", len(xorbs)).Msg("shard cache: forgot shards naming xorbs the CAS does not hold (stale cache)")
	return removed, nil
}

// listsAny reports whether a shard's xorb section lists one of the xorbs in set.
func listsAny(sec []byte, set map[hash.Hash]bool) bool {
	s := shard.NewXorbScanner(sec)
	for s.Next() {
		if set[s.Block().Hash] {
			return true
		}
	}
	return false
}
