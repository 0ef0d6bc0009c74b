package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// DedupeExpiry is how long a global-dedupe answer's key stays valid.
const DedupeExpiry = 7 * 24 * time.Hour

// GlobalDedupe answers a global-dedupe query for a chunk registered by PutShard (a file's first chunk
// or a chunk whose hash % 1024 == 0): a shard with footer, an empty file section and the xorb holding
// the chunk with all its chunks, their hashes keyed with a fresh random key stored in the footer
// (hash.Keyed(key, chunk)), created now and expiring after DedupeExpiry. ErrNotFound when the chunk
// is not indexed.
//
// Concurrency: safe for concurrent use.
func (s *Store) GlobalDedupe(ctx context.Context, chunk hash.Hash) ([]byte, error) {
	return s.GlobalDedupeAs(ctx, Access{}, chunk)
}

// GlobalDedupeAs is GlobalDedupe for a client acting in repository a.Repo, which is recorded as
// shown the xorb's chunks: its shards may then name them (access.go). The answer hides their raw
// hashes, so a client learns them only by holding the data.
func (s *Store) GlobalDedupeAs(ctx context.Context, a Access, chunk hash.Hash) ([]byte, error) {
	name := dedupeName(chunk)
	// Most queried chunks are not indexed: ask the cheap existence check first (a miss here only
	// costs a dedupe opportunity, see blob.Backend.Exists).
	if ok, err := s.be.Exists(ctx, name); err != nil {
		return nil, fmt.Errorf("dedupe chunk %s: %w", chunk, err)
	} else if !ok {
		return nil, missing{"dedupe chunk", chunk}
	}
	b, err := s.readEntry(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("dedupe chunk %s: %w", chunk, err)
	}
	x, err := parseDedupe(name, b)
	if err != nil {
		return nil, err
	}
	m, err := s.xorbMeta(ctx, x)
	if err != nil {
		return nil, fmt.Errorf("dedupe chunk %s: %w", chunk, err)
	}
	if !a.whole() {
		if _, err := s.writeAccess(ctx, blob.NewBlob{Name: shownName(a.Repo, x), Data: marshalGrant(x)}); err != nil {
			return nil, err
		}
	}
	var key hash.Hash
	if _, err := rand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("dedupe key: %w", err)
	}
	now := s.now()
	return dedupeShard(m, key, now, now.Add(DedupeExpiry)), nil
}

// dedupeShard serializes the global-dedupe answer for one xorb: header, the file bookend, the xorb
// with keyed chunk hashes, its bookend, no lookup tables, and the footer.
func dedupeShard(m *xorbMeta, key hash.Hash, created, expires time.Time) []byte {
	x := shard.Xorb{
		Hash:        m.hash,
		BytesInXorb: m.rawEnds[m.n()-1],
		Chunks:      make([]shard.XorbChunk, m.n()),
	}
	keyer := hash.NewKeyer(key)
	for i := range x.Chunks {
		x.Chunks[i] = shard.XorbChunk{Hash: keyer.Sum(m.hashes[i]), RawStart: m.rawStart(i), RawLen: m.rawLen(i)}
	}
	const xorbInfo = shard.HeaderSize + shard.EntrySize // after the header and the file bookend
	footerOff := uint64(xorbInfo + shard.EntrySize*(len(x.Chunks)+2))
	sh := &shard.Shard{
		Version: 2,
		Xorbs:   []shard.Xorb{x},
		Footer: &shard.Footer{
			Version:           1,
			FileInfoOffset:    shard.HeaderSize,
			XorbInfoOffset:    xorbInfo,
			FileLookupOffset:  footerOff,
			XorbLookupOffset:  footerOff,
			ChunkLookupOffset: footerOff,
			HMACKey:           key,
			CreatedAt:         uint64(created.Unix()),
			ExpiresAt:         uint64(expires.Unix()),
			StoredBytes:       uint64(x.BytesInXorb),
			FooterOffset:      footerOff,
		},
	}
	return sh.Marshal()
}
