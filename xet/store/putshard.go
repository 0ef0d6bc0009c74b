package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

const (
	// MaxShardBytes bounds an uploaded shard (xet-core cuts shards at 64 MiB).
	MaxShardBytes = 64 << 20
	// MaxShardChunkRefs bounds the chunks all terms of one shard may reference (about 2 TiB of file
	// data), which bounds the hashing and memory a shard can cost.
	MaxShardChunkRefs = 1 << 25
	// DedupeModulus: a chunk whose hash % DedupeModulus == 0 is indexed for global dedupe, as is the
	// first chunk of every file.
	DedupeModulus = 1024
)

// PutShard validates a shard (upload form, or with footer) against the stored xorbs and registers its
// files under namespace ns ("" for the embedded store; the repository on the server).
//
// Every file needs verification entries and the SHA-256 ext; each term must name a stored xorb, a
// chunk range in bounds, unpacked bytes equal to the chunks' raw sizes and a verification hash equal to
// the one over the stored chunk hashes; the file hash must be the hash of the file's chunks. Every
// xorb the shard lists must be stored with the same chunks. Any failure is an *InvalidError and
// nothing is registered.
//
// Each file's content is read back and hashed: its SHA-256 must be the one the shard claims (the LFS
// oid), or the shard is refused, so a mapping from oid to file is written only once it is known to
// be right (and a correct upload of an oid whose old, unverified mapping was wrong repairs it).
//
// Registration writes one entry per file (its reconstruction), then one per SHA-256 in ns, then the
// global-dedupe chunks (each file's first chunk, and chunks whose hash % 1024 == 0). Each entry is
// created atomically and only once; entries always point at entries or xorbs already stored, so a
// write error part-way (returned wrapped) leaves only complete, valid registrations that a retry
// completes. existed=true when every file and SHA-256 mapping was already registered.
//
// Concurrency: safe for concurrent and cross-process use.
func (s *Store) PutShard(ctx context.Context, ns string, body []byte) (bool, error) {
	return s.putShard(ctx, ns, body, false, nil)
}

// PutShardTrusted is PutShard for a shard built in this process by an upload session that computed
// each file's SHA-256 from the data it chunked (xet/embedded): the content is not read back and
// hashed again. Bytes from outside the process go through PutShard.
func (s *Store) PutShardTrusted(ctx context.Context, ns string, body []byte) (bool, error) {
	return s.putShard(ctx, ns, body, true, nil)
}

// PutShardWithXorbs is PutShardTrusted that also stores, in the same batch and before the entries
// naming them, the pending xorbs (PrepareBuiltXorb) of the shard's xorb section that pending
// returns (nil: not pending, so stored already).
func (s *Store) PutShardWithXorbs(ctx context.Context, ns string, body []byte, pending func(hash.Hash) *PendingXorb) (bool, error) {
	return s.putShard(ctx, ns, body, true, pending)
}

func (s *Store) putShard(ctx context.Context, ns string, body []byte, trusted bool, pending func(hash.Hash) *PendingXorb) (bool, error) {
	sh, err := parseUploadShard(body)
	if err != nil {
		return false, err
	}
	var xorbs []blob.NewBlob
	v := validator{s: s}
	if pending != nil {
		v.pending = map[hash.Hash]*xorbMeta{}
		for i := range sh.Xorbs {
			if p := pending(sh.Xorbs[i].Hash); p != nil && v.pending[p.Hash] == nil {
				v.pending[p.Hash] = p.meta
				xorbs = append(xorbs, p.blob)
			}
		}
	}
	plans, err := v.checkShard(ctx, sh)
	if err != nil {
		return false, err
	}
	if !trusted {
		if err := s.checkSHA256s(ctx, ns, plans); err != nil {
			return false, err
		}
	}
	confirmed, err := s.confirmXorbs(ctx, plans, v.pending)
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
	// gc may have moved a xorb between the confirmation and the records' write: look again, and
	// move back what it moved (it deletes nothing for a grace period).
	if _, err := s.confirmXorbs(ctx, plans, v.pending); err != nil {
		return false, fmt.Errorf("registering a shard: after its records were written: %w", err)
	}
	s.obs.Registered(newFiles(existed, plans), dedupedBytes(sh, plans))
	s.log.Debug().Int("files", len(plans)).Int("xorbs", len(sh.Xorbs)).Bool("existed", existed).
		Str("ns", ns).Msg("shard registered")
	return existed, nil
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

// filePlan is what registering one file writes: its record, and its dedupe entries.
type filePlan struct {
	file   hash.Hash
	rec    *fileRecord
	dedupe []dedupeChunk
}

// checkShard validates the shard's xorbs and files against the store and returns one plan per
// distinct file.
func (v *validator) checkShard(ctx context.Context, sh *shard.Shard) ([]filePlan, error) {
	for i := range sh.Xorbs {
		if err := v.checkXorb(ctx, &sh.Xorbs[i]); err != nil {
			return nil, err
		}
	}
	var plans []filePlan
	seen := make(map[hash.Hash]bool, len(sh.Files))
	for i := range sh.Files {
		f := &sh.Files[i]
		rec, dd, err := v.checkFile(ctx, f)
		if err != nil {
			return nil, err
		}
		if seen[f.Hash] {
			continue
		}
		seen[f.Hash] = true
		plans = append(plans, filePlan{f.Hash, rec, dd})
	}
	return plans, nil
}

// register writes the pending xorbs and the plans' entries as one batch, in dependency order
// (xorbs, file records, SHA-256 mappings in ns, dedupe entries): the backend makes them visible in
// that order, so an entry never points at one not yet written, and one fsync covers a small
// shard's xorbs and entries. existed=true when no file record or mapping was new.
func (s *Store) register(ctx context.Context, ns string, xorbs []blob.NewBlob, plans []filePlan) (bool, error) {
	blobs := slices.Clone(xorbs)
	first := len(blobs)
	for _, p := range plans {
		blobs = append(blobs, blob.NewBlob{Name: fileName(p.file), Data: p.rec.marshal()})
	}
	for _, p := range plans {
		blobs = append(blobs, blob.NewBlob{Name: sha256VerifiedName(ns, p.rec.SHA256), Data: marshalSHA(p.file, p.rec.Size)})
	}
	indexed := len(blobs)
	for _, p := range plans {
		for _, d := range p.dedupe {
			blobs = append(blobs, blob.NewBlob{Name: dedupeName(d.chunk), Data: marshalDedupe(d.xorb)})
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

// checkSHA256s hashes the content of each planned file whose oid has no verified mapping in ns yet,
// and refuses the shard when one does not hash to the SHA-256 it claims.
func (s *Store) checkSHA256s(ctx context.Context, ns string, plans []filePlan) error {
	for _, p := range plans {
		if f, _, err := s.LookupVerifiedSHA256(ctx, ns, p.rec.SHA256); err == nil && f == p.file {
			continue
		}
		got, err := s.contentSHA256(ctx, p.rec)
		if err != nil {
			return fmt.Errorf("hashing file %s: %w", p.file, err)
		}
		if want := p.rec.SHA256.SHA256(); got != want {
			return invalid("file %s: its content has SHA-256 %x, the shard says %x (the LFS oid): not registered",
				p.file, got, want)
		}
	}
	return nil
}

// contentSHA256 reads a registered file's content from its xorbs, term by term, and hashes it
// (from the state its first terms left when they were hashed on arrival, see chainPrefix).
// Memory is one record at a time.
func (s *Store) contentSHA256(ctx context.Context, rec *fileRecord) ([32]byte, error) {
	h, done := s.chainPrefix(rec) // the first terms, hashed as their xorbs arrived (chain.go)
	s.log.Debug().Int("terms", len(rec.Terms)).Int("hashed_on_arrival", done).Msg("sha256 check of a new file")
	var buf []byte
	for _, t := range rec.Terms[done:] {
		var err error
		if buf, err = s.hashTerm(ctx, h, t, buf); err != nil {
			return [32]byte{}, err
		}
	}
	return [32]byte(h.Sum(nil)), nil
}

// hashTerm writes the content of one term to h; buf is a record buffer to reuse (returned grown).
func (s *Store) hashTerm(ctx context.Context, h io.Writer, t fileTerm, buf []byte) ([]byte, error) {
	m, err := s.xorbMeta(ctx, t.Xorb)
	if err != nil {
		return buf, err
	}
	f, err := s.openXorbBlob(ctx, t.Xorb)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	start, end := int64(m.recordStart(int(t.Start))), int64(m.recordStart(int(t.End)))
	src, err := f.Section(ctx, start, end-start) // one streamed read of the term
	if err != nil {
		return buf, fmt.Errorf("xorb %s: %w", t.Xorb, err)
	}
	defer src.Close()
	// The records are scanned in a buffer sized to the term (a small file's is a few KB: a fixed
	// 1 MiB per term was most of what a server allocated for a push of small files), and an
	// uncompressed payload, most of a large file, is hashed where it lies (xorb.RecordRaw).
	var scan []byte
	if n := end - start; n < scanBufSize {
		scan = make([]byte, n)
	} else {
		sb := scanBufs.Get().(*[]byte)
		defer scanBufs.Put(sb)
		scan = *sb
	}
	rs := xorb.NewRecordScanner(src, scan, end-start)
	for {
		rec, _, err := rs.Next()
		if err == io.EOF {
			return buf, nil
		}
		var raw []byte
		if err == nil {
			raw, buf, _, _, err = xorb.RecordRaw(buf, rec)
		}
		if err != nil {
			return buf, fmt.Errorf("xorb %s: %w", t.Xorb, err)
		}
		h.Write(raw)
	}
}

// scanBufs recycles the 1 MiB buffers the SHA-256 check scans long terms through (it holds any
// record: header and at most MaxChunkCompressed bytes).
var scanBufs = sync.Pool{New: func() any { b := make([]byte, scanBufSize); return &b }}

const scanBufSize = 1 << 20

type dedupeChunk struct{ chunk, xorb hash.Hash }

// validator checks a shard against the store. It holds no more than the chunk index of the xorb it
// looked at last (consecutive terms often share one): the others come from the store's byte-bounded
// cache or are read again, so a shard over many xorbs costs no memory per xorb. The file hash is
// computed as terms are checked, never from a list of all the file's chunks.
type validator struct {
	s       *Store
	pending map[hash.Hash]*xorbMeta // xorbs stored with the shard (PutShardWithXorbs)
	last    *xorbMeta
	refs    int64
	merkle  hash.MerkleBuilder
}

func (v *validator) meta(ctx context.Context, x hash.Hash) (*xorbMeta, error) {
	if v.last != nil && v.last.hash == x {
		return v.last, nil
	}
	if m := v.pending[x]; m != nil {
		return m, nil
	}
	m, err := v.s.xorbMeta(ctx, x)
	if errors.Is(err, ErrNotFound) {
		return nil, invalid("xorb %s is not stored (upload xorbs before the shard)", x)
	}
	if err != nil {
		return nil, err
	}
	v.last = m
	return m, nil
}

// checkXorb compares a xorb entry of the shard's xorb section with the stored xorb.
func (v *validator) checkXorb(ctx context.Context, x *shard.Xorb) error {
	m, err := v.meta(ctx, x.Hash)
	if err != nil {
		return err
	}
	if len(x.Chunks) != m.n() {
		return invalid("shard xorb %s: %d chunks, stored xorb has %d", x.Hash, len(x.Chunks), m.n())
	}
	for i, c := range x.Chunks {
		if c.Hash != m.hashes[i] || c.RawStart != m.rawStart(i) || c.RawLen != m.rawLen(i) {
			return invalid("shard xorb %s: chunk %d differs from the stored xorb", x.Hash, i)
		}
	}
	if x.BytesInXorb != m.rawEnds[m.n()-1] {
		return invalid("shard xorb %s: bytes in xorb %d, stored xorb has %d", x.Hash, x.BytesInXorb, m.rawEnds[m.n()-1])
	}
	if x.BytesOnDisk != 0 && x.BytesOnDisk != m.recordsLen() {
		return invalid("shard xorb %s: bytes on disk %d, stored xorb has %d", x.Hash, x.BytesOnDisk, m.recordsLen())
	}
	return nil
}

// checkFile validates one file of the shard and returns its record and global-dedupe chunks.
func (v *validator) checkFile(ctx context.Context, f *shard.File) (*fileRecord, []dedupeChunk, error) {
	if !f.HasSHA256 {
		return nil, nil, invalid("file %s: no SHA-256 metadata ext", f.Hash)
	}
	if len(f.Verification) != len(f.Terms) {
		return nil, nil, invalid("file %s: %d verification entries for %d terms", f.Hash, len(f.Verification), len(f.Terms))
	}
	rec := &fileRecord{SHA256: f.SHA256, Terms: make([]fileTerm, len(f.Terms))}
	var dd []dedupeChunk
	v.merkle.Reset()
	first := true
	for i, t := range f.Terms {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		m, err := v.meta(ctx, t.Xorb)
		if err != nil {
			return nil, nil, fmt.Errorf("file %s term %d: %w", f.Hash, i, err)
		}
		s, e := int(t.ChunkStart), int(t.ChunkEnd)
		if t.ChunkStart >= t.ChunkEnd || e > m.n() {
			return nil, nil, invalid("file %s term %d: chunk range [%d,%d) out of bounds of xorb %s (%d chunks)",
				f.Hash, i, t.ChunkStart, t.ChunkEnd, t.Xorb, m.n())
		}
		if got := m.rawBytes(s, e); got != t.UnpackedBytes {
			return nil, nil, invalid("file %s term %d: unpacked bytes %d, chunks [%d,%d) of xorb %s hold %d",
				f.Hash, i, t.UnpackedBytes, s, e, t.Xorb, got)
		}
		v.refs += int64(e - s)
		if v.refs > MaxShardChunkRefs {
			return nil, nil, invalid("shard references more than %d chunks", MaxShardChunkRefs)
		}
		if hash.Verification(m.hashes[s:e]) != f.Verification[i] {
			return nil, nil, invalid("file %s term %d: verification hash does not match chunks [%d,%d) of xorb %s",
				f.Hash, i, s, e, t.Xorb)
		}
		for c := s; c < e; c++ {
			h := m.hashes[c]
			if first || h.Mod(DedupeModulus) == 0 {
				dd = append(dd, dedupeChunk{h, t.Xorb})
				first = false
			}
			v.merkle.Add(hash.Entry{Hash: h, Size: uint64(m.rawLen(c))})
		}
		rec.Terms[i] = fileTerm{Xorb: t.Xorb, UnpackedBytes: t.UnpackedBytes, Start: t.ChunkStart, End: t.ChunkEnd}
		rec.Size += uint64(t.UnpackedBytes)
	}
	if got := v.merkle.FileSum(); got != f.Hash {
		return nil, nil, invalid("file hash mismatch: terms hash to %s, not %s", got, f.Hash)
	}
	return rec, dd, nil
}
