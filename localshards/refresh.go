package localshards

import (
	"fmt"
	"os"
	"time"
)

// Refresh indexes the shards other processes added since the last listing and forgets the ones they
// removed. Lookup does this by itself on a miss (at most every Options.RefreshInterval); call Refresh
// to force it. It loads the index first if needed.
func (c *Cache) Refresh() error {
	if _, err := c.ready(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return ErrClosed
	}
	c.listedAt = time.Time{} // force a listing
	_, err := c.refreshLocked()
	return err
}

// refreshLocked re-lists the directory when it changed and extends the view with new shards. It
// returns the (possibly unchanged) current view. c.mu is held.
func (c *Cache) refreshLocked() (*view, error) {
	v := c.view.Load()
	if v == nil {
		return nil, nil
	}
	st, err := os.Stat(c.dir)
	if err != nil {
		return v, fmt.Errorf("shard cache: %w", err)
	}
	if st.ModTime().Equal(c.dirMtime) && c.listedAt.Sub(st.ModTime()) > coarseMtime {
		return v, nil // unchanged since a listing made well after its last change
	}
	listed := time.Now()
	names, mtime, err := c.list()
	if err != nil {
		return v, err
	}
	present := make(map[string]struct{}, len(names))
	var fresh []string
	for _, name := range names {
		present[name] = struct{}{}
		if _, ok := c.known[name]; !ok {
			fresh = append(fresh, name)
		}
	}
	for name, si := range c.known {
		if _, ok := present[name]; !ok {
			if si >= 0 {
				v.shards[si].dead.Store(true)
			}
			delete(c.known, name) // a later file of that name (same content) is indexed again
		}
	}
	c.dirMtime, c.listedAt = mtime, listed
	if len(fresh) == 0 {
		return v, nil
	}
	ps := c.scanNew(c.classify(fresh, false))
	if len(ps) == 0 {
		return v, nil
	}
	nv := c.extendLocked(v, ps)
	c.view.Store(nv)
	c.log.Debug().Int("shards", len(ps)).Msg("shard cache picked up shards added by other processes")
	return nv, nil
}
