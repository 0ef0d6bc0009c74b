package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

type dedupeChunk struct{ chunk, xorb hash.Hash }

// validator checks a shard against the store. It holds no more than the chunk index of the xorb it
// looked at last (consecutive terms often share one): the others come from the store's byte-bounded
// cache or are read again, so a shard over many xorbs costs no memory per xorb. The file hash is
// computed as terms are checked, never from a list of all the file's chunks.
//
// Its errors name only what the shard holds (hashes, ranges, sizes the client sent), never what the
// store holds: a client learns of a stored xorb only what it may read.
type validator struct {
	s       *Store
	access  Access
	own     bool                    // the owner's or an in-process session's: references are its own
	pending map[hash.Hash]*xorbMeta // xorbs stored with the shard (PutShardWithXorbs)
	allowed map[hash.Hash]bool      // xorbs the access may reference, as found
	cost    regCost
	last    *xorbMeta
	merkle  hash.MerkleBuilder
}

// takePending notes the pending xorbs of the shard's xorb section (PutShardWithXorbs) and returns
// their blobs, to be stored with the registration.
func (v *validator) takePending(sh *shard.Shard, pending func(hash.Hash) *PendingXorb) []blob.NewBlob {
	if pending == nil {
		return nil
	}
	var xorbs []blob.NewBlob
	v.pending = map[hash.Hash]*xorbMeta{}
	for i := range sh.Xorbs {
		if p := pending(sh.Xorbs[i].Hash); p != nil && v.pending[p.Hash] == nil {
			v.pending[p.Hash] = p.meta
			xorbs = append(xorbs, p.blob)
		}
	}
	return xorbs
}

// checkShard validates the shard's xorbs and files against the store and returns one plan per
// distinct file (a file listed twice is checked once).
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
		if seen[f.Hash] {
			continue
		}
		seen[f.Hash] = true
		rec, dd, err := v.checkFile(ctx, f)
		if err != nil {
			return nil, err
		}
		plans = append(plans, filePlan{file: f.Hash, rec: rec, dedupe: dd})
	}
	return plans, nil
}

// meta returns the chunk index of xorb x, which the access must be allowed to reference.
func (v *validator) meta(ctx context.Context, x hash.Hash) (*xorbMeta, error) {
	if v.last != nil && v.last.hash == x {
		return v.last, nil
	}
	if m := v.pending[x]; m != nil {
		return m, nil
	}
	if err := v.mayReference(ctx, x); err != nil {
		return nil, err
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

// mayReference refuses xorb x unless the access may reference it (CanReference); the owner and a
// trusted session may reference any.
func (v *validator) mayReference(ctx context.Context, x hash.Hash) error {
	if v.own || v.access.whole() {
		return nil
	}
	ok, seen := v.allowed[x]
	if !seen {
		var err error
		if ok, err = v.s.CanReference(ctx, v.access, x); err != nil {
			return err
		}
		if v.allowed == nil {
			v.allowed = map[hash.Hash]bool{}
		}
		v.allowed[x] = ok
	}
	if !ok {
		return errNotYours(x)
	}
	return nil
}

// checkXorb compares a xorb entry of the shard's xorb section with the stored xorb.
func (v *validator) checkXorb(ctx context.Context, x *shard.Xorb) error {
	m, err := v.meta(ctx, x.Hash)
	if err != nil {
		return err
	}
	if len(x.Chunks) != m.n() {
		return invalid("shard xorb %s: %d chunks, not those of the stored xorb", x.Hash, len(x.Chunks))
	}
	for i, c := range x.Chunks {
		if c.Hash != m.hashes[i] || c.RawStart != m.rawStart(i) || c.RawLen != m.rawLen(i) {
			return invalid("shard xorb %s: chunk %d differs from the stored xorb", x.Hash, i)
		}
	}
	if x.BytesInXorb != m.rawEnds[m.n()-1] {
		return invalid("shard xorb %s: bytes in xorb %d, not those of the stored xorb", x.Hash, x.BytesInXorb)
	}
	if x.BytesOnDisk != 0 && x.BytesOnDisk != m.recordsLen() {
		return invalid("shard xorb %s: bytes on disk %d, not those of the stored xorb", x.Hash, x.BytesOnDisk)
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
	known, err := v.knownTerms(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	rec := &fileRecord{SHA256: f.SHA256, Terms: make([]fileTerm, len(f.Terms))}
	var dd []dedupeChunk
	v.merkle.Reset()
	for i, t := range f.Terms {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		m, err := v.checkTerm(ctx, f, i)
		if err != nil {
			return nil, nil, err
		}
		s, e := int(t.ChunkStart), int(t.ChunkEnd)
		for c := s; c < e; c++ {
			h := m.hashes[c]
			if (i == 0 && c == s) || h.Mod(DedupeModulus) == 0 {
				dd = append(dd, dedupeChunk{h, t.Xorb})
			}
			if !known {
				v.merkle.Add(hash.Entry{Hash: h, Size: uint64(m.rawLen(c))})
			}
		}
		rec.Terms[i] = fileTerm{Xorb: t.Xorb, UnpackedBytes: t.UnpackedBytes, Start: t.ChunkStart, End: t.ChunkEnd}
		rec.Size += uint64(t.UnpackedBytes)
	}
	if known {
		return rec, dd, nil
	}
	if got := v.merkle.FileSum(); got != f.Hash {
		return nil, nil, invalid("file hash mismatch: the terms do not hash to %s", f.Hash)
	}
	return rec, dd, nil
}

// checkTerm checks term i of f against its stored xorb: bounds, unpacked bytes and verification
// hash (which only a client holding the chunks' hashes can give). It returns the xorb's index.
func (v *validator) checkTerm(ctx context.Context, f *shard.File, i int) (*xorbMeta, error) {
	t := f.Terms[i]
	m, err := v.meta(ctx, t.Xorb)
	if err != nil {
		return nil, fmt.Errorf("file %s term %d: %w", f.Hash, i, err)
	}
	s, e := int(t.ChunkStart), int(t.ChunkEnd)
	if t.ChunkStart >= t.ChunkEnd || e > m.n() {
		return nil, invalid("file %s term %d: chunk range [%d,%d) out of bounds of xorb %s", f.Hash, i, t.ChunkStart, t.ChunkEnd, t.Xorb)
	}
	if m.rawBytes(s, e) != t.UnpackedBytes {
		return nil, invalid("file %s term %d: unpacked bytes %d are not those of chunks [%d,%d) of xorb %s",
			f.Hash, i, t.UnpackedBytes, s, e, t.Xorb)
	}
	if hash.Verification(m.hashes[s:e]) != f.Verification[i] {
		return nil, invalid("file %s term %d: verification hash does not match chunks [%d,%d) of xorb %s",
			f.Hash, i, s, e, t.Xorb)
	}
	return m, nil
}

// knownFileRefs is the size from which a file's record, when stored already, is read to spare
// the file hash: below it the merkle tree costs less than the read.
const knownFileRefs = 4096

// knownTerms reports whether f's record is stored with exactly f's terms: its file hash was checked
// when it was first registered, and is not computed again (the terms' verification hashes still
// are). It counts f's chunk references as checked with or without the file hash.
func (v *validator) knownTerms(ctx context.Context, f *shard.File) (bool, error) {
	var refs int64
	for _, t := range f.Terms {
		refs += int64(t.ChunkEnd) - int64(t.ChunkStart)
	}
	known := false
	if refs >= knownFileRefs {
		rec, err := v.s.fileRecord(ctx, f.Hash)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return false, err
		default:
			known = sameTerms(rec, f.Terms)
		}
	}
	if known {
		v.cost.knownRefs += refs
		return true, nil
	}
	if v.cost.refs+refs > MaxShardHashedRefs {
		return false, invalid("shard names more than %d chunks of files not stored before: send fewer files per shard", MaxShardHashedRefs)
	}
	v.cost.refs += refs
	return false, nil
}

// sameTerms reports whether a stored record has exactly the terms ts.
func sameTerms(rec *fileRecord, ts []shard.Term) bool {
	if len(rec.Terms) != len(ts) {
		return false
	}
	for i, t := range ts {
		r := rec.Terms[i]
		if r.Xorb != t.Xorb || r.Start != t.ChunkStart || r.End != t.ChunkEnd || r.UnpackedBytes != t.UnpackedBytes {
			return false
		}
	}
	return true
}
