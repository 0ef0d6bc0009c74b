package localshards

import (
	"errors"
	"slices"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// ownBuffer merges the shards of small uploads in memory (xet-core merges small session shards
// before it caches them), so that a push of thousands of small files adds a few shard files to the
// directory instead of one per file: every file in the directory costs each process a listing entry
// and an index segment. Lookups see buffered chunks at once; other processes see them when the
// buffer is written (at Options.MergeOwnBytes, Flush or Close). A killed process loses only cache
// entries, never data: the CAS already holds what they describe.
type ownBuffer struct {
	mu      sync.Mutex
	s       shard.Shard
	bytes   int64                   // size of the merged xorb sections
	byChunk map[hash.Hash][2]uint32 // chunk -> (index in s.Xorbs, chunk index)
}

// add merges s into the buffer and reports whether it reached limit bytes.
func (b *ownBuffer) add(s *shard.Shard, limit int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byChunk == nil {
		b.byChunk = make(map[hash.Hash][2]uint32)
	}
	for i := range s.Xorbs {
		x := s.Xorbs[i]
		x.Chunks = slices.Clone(x.Chunks) // the caller may reuse its slices
		xi := uint32(len(b.s.Xorbs))
		b.s.Xorbs = append(b.s.Xorbs, x)
		for ci, c := range x.Chunks {
			if _, ok := b.byChunk[c.Hash]; !ok {
				b.byChunk[c.Hash] = [2]uint32{xi, uint32(ci)}
			}
		}
	}
	// Files are not kept: the cache answers chunks (Lookup, Forget) from the xorb sections, and a
	// one-chunk file's section (header, term, verification, SHA-256 entry: 192 bytes) was two thirds
	// of what a small upload added to the cache.
	for i := range s.Xorbs {
		if isSingle(&s.Xorbs[i]) {
			b.bytes += singleSize
		} else {
			b.bytes += int64(1+len(s.Xorbs[i].Chunks)) * shard.EntrySize
		}
	}
	return b.bytes >= limit
}

// lookup answers a chunk from the buffer.
func (b *ownBuffer) lookup(chunk hash.Hash) (shard.Match, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	at, ok := b.byChunk[chunk]
	if !ok {
		return shard.Match{}, false
	}
	x := &b.s.Xorbs[at[0]]
	return shard.Match{Xorb: x.Hash, Index: at[1], Chunks: x.Chunks}, true
}

// take empties the buffer and returns what it held, sorted, or nil when it was empty.
func (b *ownBuffer) take() *shard.Shard {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.s.Xorbs) == 0 {
		return nil
	}
	s := b.s
	b.s, b.bytes, b.byChunk = shard.Shard{}, 0, nil
	s.Sort()
	return &s
}

// Flush writes the buffered small uploads (see Options.MergeOwnBytes), their one-chunk xorbs as one
// singles file and the other xorbs as one shard file, and indexes them. It does nothing when nothing is buffered.
func (c *Cache) Flush() error {
	s := c.own.take()
	if s == nil {
		return nil
	}
	var err error
	if singles := splitSingles(s); len(singles) > 0 {
		err = c.writeSingles(singles)
	}
	if len(s.Xorbs) > 0 {
		err = errors.Join(err, c.writeOwn(s))
	}
	return err
}
