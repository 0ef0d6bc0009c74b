package store

import (
	"sync"
	"time"
)

// What one registration may cost the server. A shard is small, and what it names is not: a file
// may name any chunk ranges of the xorbs its repository holds, as often as it likes, so a shard of
// a few hundred KB can name terabytes of (highly compressible) chunk data. Two costs grow with
// what it names:
//
//   - checking the terms: per chunk reference, its verification hash (tens of nanoseconds) and the
//     file hash (the merkle tree over every chunk, about a microsecond a chunk). The file hash is
//     not computed again for a file whose record, already stored, has the same terms; otherwise it
//     cannot be skipped (a wrong record would stand for the file hash forever). It is bounded by
//     caps, refused before any hashing: MaxFileChunks and MaxFileTerms per file, MaxShardChunkRefs
//     per shard, and MaxShardHashedRefs references of files whose hash is computed (under a second
//     or two of one core at worst). The caps, not the bytes sent, bound it: version 2 of a large
//     file sends few bytes and still names every chunk.
//   - the SHA-256 check: reading and hashing each new file's content, to know that the oid the
//     shard claims is right. It is paid from a budget: FreeHashBytes per registration, plus what
//     the repository's own xorb uploads brought (the raw bytes the server validated, each byte
//     spent once: credits). A file whose check would exceed the budget is registered without it,
//     as an unverified mapping: never answered as "already stored" to an uploader, and its
//     downloads are verified by the client's own SHA-256 of what it receives (git-lfs and our
//     agent both do). A later upload of the same file within budget verifies it. A file whose
//     content was hashed to its oid once (a verified marker, any repository) is not hashed again.
//
// So a push of new data verifies everything it sends; version 2 of a 10 GB file with 1% changed
// sends 100 MB and registers at once, unverified unless its first terms were hashed as they
// arrived (chain.go); the same file pushed to a second repository registers verified by its
// marker, without hashing.

const (
	// FreeHashBytes is the SHA-256 check every registration may cost, whatever it uploaded.
	FreeHashBytes = 16 << 20
	// MaxFileChunks bounds the chunk references of one file: 1M chunks, 64 GiB at the average
	// chunk size (the Hub takes files up to 50 GB), under a second of checking.
	MaxFileChunks = 1 << 20
	// MaxFileTerms bounds the terms of one file, and so its record (44 bytes a term).
	MaxFileTerms = 1 << 20
	// creditTTL is how long what an upload brought stays to be spent by a registration.
	creditTTL = time.Hour
	// maxCreditRepos bounds the repositories whose credit is kept.
	maxCreditRepos = 4096
)

// credits are the raw bytes each repository's validated xorb uploads brought, for the SHA-256
// checks of its next registrations (see above). They are kept in memory: a registration that
// reaches another server instance than its xorbs did finds none, and is checked within
// FreeHashBytes, else registered unverified. Safe for concurrent use.
type credits struct {
	mu sync.Mutex
	m  map[string]credit
}

type credit struct {
	bytes int64
	until time.Time
}

// add credits n bytes to repo.
func (c *credits) add(repo string, n int64, now time.Time) {
	if repo == "" || n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]credit{}
	}
	cur, ok := c.m[repo]
	if !ok && len(c.m) >= maxCreditRepos {
		c.evict(now)
	}
	if cur.until.Before(now) {
		cur.bytes = 0
	}
	c.m[repo] = credit{bytes: cur.bytes + n, until: now.Add(creditTTL)}
}

// evict drops expired credits, and when none expired, the one that expires first.
func (c *credits) evict(now time.Time) {
	var oldest string
	for k, v := range c.m {
		if v.until.Before(now) {
			delete(c.m, k)
		} else if oldest == "" || v.until.Before(c.m[oldest].until) {
			oldest = k
		}
	}
	if len(c.m) >= maxCreditRepos {
		delete(c.m, oldest)
	}
}

// take removes and returns repo's credit.
func (c *credits) take(repo string, now time.Time) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.m[repo]
	delete(c.m, repo)
	if !ok || cur.until.Before(now) {
		return 0
	}
	return cur.bytes
}

// hashBudget is what one registration's SHA-256 checks may still read and hash.
type hashBudget struct {
	left   int64
	credit int64 // taken from the repository's credits, given back unspent
	spent  int64 // hashed
}

// pay spends n bytes and reports whether the budget held them.
func (b *hashBudget) pay(n int64) bool {
	if n > b.left {
		return false
	}
	b.left -= n
	b.spent += n
	return true
}

// unspentCredit is the part of the taken credit the registration did not use (the free part is
// spent first).
func (b *hashBudget) unspentCredit() int64 { return min(b.credit, b.left) }
