package localshards

import (
	"fmt"
	"sync/atomic"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// batchBlock is how many probes LookupBatch issues before it waits for any of them.
const batchBlock = 32

// LookupBatch looks up every chunk of chunks, setting found[i] and, when found, out[i] as Lookup
// would. On a large cache a lookup costs one memory miss; Lookup pays them one after the other, while
// LookupBatch first touches the slots of a block of chunks with independent loads, so the misses
// overlap and throughput is several times Lookup's. out and found must be at least len(chunks) long.
// Safe for concurrent use.
func (c *Cache) LookupBatch(chunks []hash.Hash, out []Match, found []bool) error {
	if len(out) < len(chunks) || len(found) < len(chunks) {
		return fmt.Errorf("localshards: LookupBatch of %d chunks with %d results and %d flags", len(chunks), len(out), len(found))
	}
	v, err := c.ready()
	if err != nil {
		return err
	}
	missed := false
	for lo := 0; lo < len(chunks); lo += batchBlock {
		blk := chunks[lo:min(lo+batchBlock, len(chunks))]
		warm(v, blk)
		for i := range blk {
			m, ok, err := c.find(v, blk[i])
			if err != nil {
				return err
			}
			out[lo+i], found[lo+i] = m, ok
			missed = missed || !ok
		}
	}
	if !missed {
		return nil
	}
	nv := c.refreshOnMiss(v)
	if nv == nil {
		return nil
	}
	for i := range chunks {
		if !found[i] {
			m, ok, err := c.find(nv, chunks[i])
			if err != nil {
				return err
			}
			out[i], found[i] = m, ok
		}
	}
	return nil
}

// warmSink keeps warm's loads from being optimised away.
var warmSink uint64

// warm loads, for each chunk and every large segment, the chunk's filter block and, when the filter
// passes it, the first slot of its (unkeyed) bucket. The loads do not depend on each other (the
// filter's branch is almost always predicted "absent"), so the CPU keeps many in flight at once.
func warm(v *view, blk []hash.Hash) {
	var sum uint64
	for _, s := range v.segs {
		if len(s.keys) < 1<<16 { // small segments stay in cache anyway
			continue
		}
		for i := range blk {
			k := blk[i].Truncate()
			if s.filter == nil || s.filter.mayContain(k) {
				sum += s.keys[s.bucket(k)*slotsPerBucket]
			}
		}
	}
	atomic.AddUint64(&warmSink, sum)
}
