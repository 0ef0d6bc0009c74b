package localshards

import (
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// Xorbs returns the chunk lists the cache holds of the xorbs in want (each chunk's raw start and
// length in its xorb: what a reconstruction plan does not say), by xorb, for those an unexpired
// cached shard lists; the others are left out. It reads what the index lists (the first call
// loads it) and the xorb sections of the shard files that hold them, never the CAS. After Forget it
// answers nothing, as Lookup does. For readers that lay chunk boundaries over plans (the log
// command); uploads ask Lookup.
func (c *Cache) Xorbs(want []hash.Hash) (map[hash.Hash][]shard.XorbChunk, error) {
	if c.stale.Load() || len(want) == 0 {
		return nil, nil
	}
	v, err := c.ready()
	if err != nil {
		return nil, err
	}
	set := make(map[hash.Hash]bool, len(want))
	for _, h := range want {
		set[h] = true
	}
	out := map[hash.Hash][]shard.XorbChunk{}
	for i := range v.xorbs {
		x := &v.xorbs[i]
		if !set[x.hash] || out[x.hash] != nil {
			continue
		}
		sh := v.shards[x.shard]
		if sh.dead.Load() || !c.valid(sh.expires) {
			continue
		}
		ch, err := c.xorbChunks(sh, x, uint32(i))
		if err != nil {
			return nil, err
		}
		if ch != nil {
			out[x.hash] = ch
		}
	}
	return out, nil
}
