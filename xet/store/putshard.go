package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

const (
	// MaxShardBytes bounds an uploaded shard (xet-core cuts shards at 64 MiB).
	MaxShardBytes = 64 << 20
	// MaxShardChunkRefs bounds the chunks all terms of one shard may reference (about 512 GiB of
	// file data at the average chunk size), which bounds the checking a shard can cost (budget.go).
	MaxShardChunkRefs = 1 << 23
	// MaxShardHashedRefs bounds the chunk references of a shard's files whose file hash is
	// computed (files not stored before with the same terms): the merkle tree, about a
	// microsecond a chunk, is the costliest part of the check a shard's bytes do not pay for.
	MaxShardHashedRefs = 1 << 21
	// DedupeModulus: a chunk whose hash % DedupeModulus == 0 is indexed for global dedupe, as is the
	// first chunk of every file.
	DedupeModulus = 1024
)

// PutShard is PutShardAs for the store's owner registering in namespace ns (the embedded store's
// sessions, tools, tests): the shard's xorbs are not checked against ns's access records, and every
// new file's content is hashed, without a budget. Shards from clients go through PutShardAs.
func (s *Store) PutShard(ctx context.Context, ns string, body []byte) (bool, error) {
	existed, _, err := s.putShard(ctx, Access{Repo: ns}, body, modeOwner, nil)
	return existed, err
}

// mode is how far a registration's caller is trusted.
type mode int

const (
	modeClient  mode = iota // bytes from a client: references checked, SHA-256 checks within budget
	modeOwner               // the store's owner: references its own, every SHA-256 checked
	modeTrusted             // an in-process session: references its own, SHA-256 computed by it
)

// PutShardAs validates a shard (upload form, or with footer) against the stored xorbs and registers
// its files in repository a.Repo ("" for the embedded store; the repository on the server).
//
// Every file needs verification entries and the SHA-256 ext; each term must name a xorb a may
// reference (CanReference: uploaded by the repository or the user, or shown to the repository by a
// keyed answer), a chunk range in bounds, unpacked bytes equal to the chunks' raw sizes and a
// verification hash equal to the one over the stored chunk hashes; the file hash must be the hash
// of the file's chunks. Every xorb the shard lists must be one a may reference, stored with the
// same chunks. A file may name at most MaxFileChunks chunks and MaxFileTerms terms, a shard
// MaxShardChunkRefs: a shard over the caps is refused before anything is hashed. Any failure is an
// *InvalidError naming only what the shard holds, and nothing is registered.
//
// Each new file's content is read back and hashed within the registration's budget (budget.go):
// its SHA-256 must be the one the shard claims (the LFS oid), or the shard is refused. A file
// within the budget gets a verified mapping from oid to file (and a correct upload of an oid whose
// old, unverified mapping was wrong repairs it); a file beyond it gets an unverified one.
//
// Registration writes one entry per file (its reconstruction), then per file its SHA-256 mapping
// and its membership of the repository, then the global-dedupe chunks (each file's first chunk, and
// chunks whose hash % 1024 == 0). Each entry is created atomically and only once; entries always
// point at entries or xorbs already stored, so a write error part-way (returned wrapped) leaves only
// complete, valid registrations that a retry completes. existed=true when every file, mapping and
// membership was already registered.
//
// Concurrency: safe for concurrent and cross-process use.
func (s *Store) PutShardAs(ctx context.Context, a Access, body []byte) (bool, error) {
	existed, _, err := s.putShard(ctx, a, body, modeClient, nil)
	return existed, err
}

// PutShardTrusted is PutShard for a shard built in this process by an upload session that computed
// each file's SHA-256 from the data it chunked (xet/embedded): the content is not read back and
// hashed again, and the session's references are its own (it hashed the data it found them by).
// Bytes from outside the process go through PutShardAs.
func (s *Store) PutShardTrusted(ctx context.Context, ns string, body []byte) (bool, error) {
	existed, _, err := s.putShard(ctx, Access{Repo: ns}, body, modeTrusted, nil)
	return existed, err
}

// PutShardWithXorbs is PutShardTrusted that also stores, in the same batch and before the entries
// naming them, the pending xorbs (PrepareBuiltXorb) of the shard's xorb section that pending
// returns (nil: not pending, so stored already).
func (s *Store) PutShardWithXorbs(ctx context.Context, ns string, body []byte, pending func(hash.Hash) *PendingXorb) (bool, error) {
	existed, _, err := s.putShard(ctx, Access{Repo: ns}, body, modeTrusted, pending)
	return existed, err
}

// regCost is what a registration cost: chunk references checked with the file hash (merkle) and
// without it (a file whose record stood), bytes read and hashed for SHA-256 checks, and files
// registered unverified.
type regCost struct {
	refs, knownRefs, hashed int64
	unverified              int
}

func (s *Store) putShard(ctx context.Context, a Access, body []byte, m mode, pending func(hash.Hash) *PendingXorb) (bool, regCost, error) {
	sh, err := parseUploadShard(body)
	if err != nil {
		return false, regCost{}, err
	}
	if err := checkCaps(sh); err != nil {
		return false, regCost{}, err
	}
	v := validator{s: s, access: a, own: m != modeClient}
	xorbs := v.takePending(sh, pending)
	plans, err := v.checkShard(ctx, sh)
	cost := &v.cost
	if err != nil {
		return false, *cost, err
	}
	if m == modeTrusted {
		for i := range plans {
			plans[i].verified = true
		}
	} else if err := s.checkSHA256s(ctx, a.Repo, plans, m == modeClient, cost); err != nil {
		return false, *cost, err
	}
	if m == modeTrusted && !a.whole() {
		// The session built the xorbs of its shard from the repository's data (their raw sizes
		// were checked against the stored xorbs).
		for i := range sh.Xorbs {
			if _, err := s.recordUpload(ctx, a, sh.Xorbs[i].Hash, uint64(sh.Xorbs[i].BytesInXorb)); err != nil {
				return false, *cost, err
			}
		}
	}
	s.noteHistory(a.Repo, sh, plans)
	existed, err := s.confirmAndRegister(ctx, a.Repo, xorbs, plans, v.pending)
	if err != nil {
		return false, *cost, err
	}
	s.obs.Registered(newFiles(existed, plans), dedupedBytes(sh, plans))
	s.log.Debug().Int("files", len(plans)).Int("xorbs", len(sh.Xorbs)).Bool("existed", existed).Str("ns", a.Repo).
		Int64("hashed", cost.hashed).Int("unverified", cost.unverified).Msg("shard registered")
	return existed, *cost, nil
}

// confirmAndRegister confirms the plans' xorbs, writes the registration within RegisterWithin of
// that, and confirms them again (gc may have moved one between the two: it is moved back).
func (s *Store) confirmAndRegister(ctx context.Context, ns string, xorbs []blob.NewBlob, plans []filePlan, pending map[hash.Hash]*xorbMeta) (bool, error) {
	confirmed, err := s.confirmXorbs(ctx, plans, pending)
	if err != nil {
		return false, err
	}
	if time.Since(confirmed) > RegisterWithin {
		return false, fmt.Errorf("registering a shard: %v since its xorbs were confirmed, over %v (gc may have moved them since): try again",
			time.Since(confirmed).Round(time.Second), RegisterWithin)
	}
	existed, err := s.register(ctx, ns, xorbs, plans)
	if err != nil {
		return false, err
	}
	if _, err := s.confirmXorbs(ctx, plans, pending); err != nil {
		return false, fmt.Errorf("registering a shard: after its records were written: %w", err)
	}
	return existed, nil
}

// checkCaps refuses a shard naming more chunks or terms than the caps allow, before anything of it
// is hashed (see budget.go).
func checkCaps(sh *shard.Shard) error {
	var total int64
	for i := range sh.Files {
		f := &sh.Files[i]
		if len(f.Terms) > MaxFileTerms {
			return invalid("file %s: %d terms, at most %d", f.Hash, len(f.Terms), MaxFileTerms)
		}
		var n int64
		for _, t := range f.Terms {
			if t.ChunkEnd > t.ChunkStart {
				n += int64(t.ChunkEnd - t.ChunkStart)
			}
		}
		if n > MaxFileChunks {
			return invalid("file %s: %d chunk references, at most %d", f.Hash, n, MaxFileChunks)
		}
		if total += n; total > MaxShardChunkRefs {
			return invalid("shard references more than %d chunks", MaxShardChunkRefs)
		}
	}
	return nil
}

// newFiles is how many files a registration added: none when nothing it wrote was new.
func newFiles(existed bool, plans []filePlan) int {
	if existed {
		return 0
	}
	return len(plans)
}

// dedupedBytes is what the shard's files hold in xorbs it did not bring: bytes stored before.
func dedupedBytes(sh *shard.Shard, plans []filePlan) uint64 {
	own := make(map[hash.Hash]bool, len(sh.Xorbs))
	for i := range sh.Xorbs {
		own[sh.Xorbs[i].Hash] = true
	}
	var n uint64
	for _, p := range plans {
		for _, t := range p.rec.Terms {
			if !own[t.Xorb] {
				n += uint64(t.UnpackedBytes)
			}
		}
	}
	return n
}

// parseUploadShard parses a shard upload within the size limit, in any shape a client sends
// (shard.ParseUpload); a keyed (global-dedupe) shard is not an upload.
func parseUploadShard(body []byte) (*shard.Shard, error) {
	if len(body) > MaxShardBytes {
		return nil, invalid("shard of %d bytes exceeds %d", len(body), MaxShardBytes)
	}
	sh, keyed, err := shard.ParseUpload(body)
	if err != nil {
		return nil, invalid("%v", err)
	}
	if keyed {
		return nil, invalid("shard: keyed (a global-dedupe answer), not an upload")
	}
	return sh, nil
}

// filePlan is what registering one file writes: its record, its dedupe entries, and whether its
// content was hashed to its SHA-256 (else its mapping is written unverified).
type filePlan struct {
	file     hash.Hash
	rec      *fileRecord
	dedupe   []dedupeChunk
	verified bool
	history  blob.NewBlob // the file's history record (history.go); none for the whole store
}

// register writes the pending xorbs and the plans' entries as one batch, in dependency order
// (xorbs, file records, then per file its SHA-256 mapping in ns and its membership of ns, then the
// verified markers of files of markerMinBytes or more, dedupe entries and history records): the
// backend makes them visible in that order, so an entry never points at one not yet written, and
// one fsync covers a small shard's xorbs and entries. existed=true when no file record, mapping or
// membership was new.
func (s *Store) register(ctx context.Context, ns string, xorbs []blob.NewBlob, plans []filePlan) (bool, error) {
	blobs := slices.Clone(xorbs)
	first := len(blobs)
	for _, p := range plans {
		rec := p.rec
		if !p.verified {
			// The record keeps a SHA-256 only once it is known to be the content's.
			r := *p.rec
			r.SHA256 = hash.Zero
			rec = &r
		}
		blobs = append(blobs, blob.NewBlob{Name: fileName(p.file), Data: rec.marshal()})
	}
	for _, p := range plans {
		m := blob.NewBlob{Name: sha256Name(ns, p.rec.SHA256), Data: marshalSHA(p.file, p.rec.Size)}
		if p.verified {
			m.Name = sha256VerifiedName(ns, p.rec.SHA256)
		}
		blobs = append(blobs, m)
		if ns != "" {
			blobs = append(blobs, blob.NewBlob{Name: memberName(ns, p.file), Data: marshalGrant(p.file)})
		}
	}
	indexed := len(blobs)
	for _, p := range plans {
		if p.verified && p.rec.Size >= markerMinBytes {
			blobs = append(blobs, blob.NewBlob{Name: verifiedName(p.file), Data: marshalVerified(p.rec.SHA256)})
		}
		for _, d := range p.dedupe {
			blobs = append(blobs, blob.NewBlob{Name: dedupeName(d.chunk), Data: marshalDedupe(d.xorb)})
		}
		if p.history.Name != "" {
			blobs = append(blobs, p.history)
		}
	}
	created, err := s.be.CreateBatch(ctx, blobs)
	if err != nil {
		return false, fmt.Errorf("registering %d files: %w", len(plans), err)
	}
	return !slices.Contains(created[first:indexed], true), nil
}

// confirmXorbs asks the backend itself (no cache) whether every xorb the plans' terms name is
// stored, restoring it from gc's trash when it is there, and returns when it started: the records
// must follow within RegisterWithin (see Collect). Xorbs stored with the shard are not asked for.
func (s *Store) confirmXorbs(ctx context.Context, plans []filePlan, pending map[hash.Hash]*xorbMeta) (time.Time, error) {
	start := time.Now()
	seen := map[hash.Hash]bool{}
	for _, p := range plans {
		for _, t := range p.rec.Terms {
			if seen[t.Xorb] || pending[t.Xorb] != nil {
				continue
			}
			seen[t.Xorb] = true
			ok, err := s.be.Exists(ctx, xorbName(t.Xorb))
			if err == nil && !ok {
				ok, err = s.restoreXorb(ctx, t.Xorb)
			}
			if err != nil {
				return start, fmt.Errorf("xorb %s: %w", t.Xorb, err)
			}
			if !ok {
				s.meta.drop(t.Xorb)
				return start, invalid("xorb %s is not stored (upload xorbs before the shard)", t.Xorb)
			}
		}
	}
	return start, nil
}
