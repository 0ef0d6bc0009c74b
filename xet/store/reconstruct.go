package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Reconstruct plans the download of a registered file, whole when rng is nil, else the bytes
// [rng.Start, min(rng.End, size-1)]. The answer mirrors the Hub's v2 reconstruction: the terms that
// overlap the range, the first starting at the chunk holding rng.Start and the last ending with the
// chunk holding the range's end (whole chunks; unpacked_length counts them all);
// offset_into_first_range is what to skip of the first term; per xorb one fetch whose ranges are the
// needed chunk ranges merged where they touch or overlap, with inclusive byte ranges into the xorb's
// records region (from the first chunk's record header to the last byte of the last record). URLs are
// empty: the server signs them, the local client reads OpenXorb.
//
// Errors: ErrNotFound for an unknown file; ErrRangeNotSatisfiable when rng.Start >= size (always for
// an empty file with a range); *InvalidError when rng.End < rng.Start.
//
// Concurrency: safe for concurrent use; reads only the file's entry and the (cached) xorb footers.
func (s *Store) Reconstruct(ctx context.Context, file hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	return s.ReconstructIn(ctx, "", file, rng, 0)
}

// ReconstructIn is Reconstruct for a reader of repository repo: a file not registered there is
// ErrNotFound (access.go). With maxTerms > 0 the answer holds at most that many terms: the first
// ones of the range, whole; the bytes after the last are asked for with another range starting
// where it ends (a file of a million terms would otherwise be an answer of hundreds of MB).
func (s *Store) ReconstructIn(ctx context.Context, repo string, file hash.Hash, rng *casapi.ByteRange, maxTerms int) (*casapi.ReconstructionV2, error) {
	if err := s.inRepo(ctx, repo, file); err != nil {
		return nil, err
	}
	rec, err := s.fileRecord(ctx, file)
	if err != nil {
		return nil, err
	}
	out := &casapi.ReconstructionV2{Terms: []casapi.Term{}, Xorbs: map[hash.Hash][]casapi.XorbFetch{}}
	if rng == nil && rec.Size == 0 {
		return out, nil
	}
	first, last, err := byteSpan(file, rec.Size, rng)
	if err != nil {
		return nil, err
	}
	p := termPlan{out: out, needed: map[hash.Hash][]casapi.ChunkRange{}, metas: map[hash.Hash]*xorbMeta{}}
	if err := s.planTerms(ctx, file, rec, first, last, maxTerms, &p); err != nil {
		return nil, err
	}
	p.fetches()
	return out, nil
}

// byteSpan is the first and last byte of a file of size that rng asks for (nil: all of it).
func byteSpan(file hash.Hash, size uint64, rng *casapi.ByteRange) (first, last uint64, err error) {
	if rng == nil {
		return 0, size - 1, nil
	}
	if rng.End < rng.Start {
		return 0, 0, invalid("range %d-%d: end before start", rng.Start, rng.End)
	}
	if rng.Start >= size {
		return 0, 0, fmt.Errorf("file %s: range start %d is past its end: %w", file, rng.Start, ErrRangeNotSatisfiable)
	}
	return rng.Start, min(rng.End, size-1), nil
}

// termPlan is a reconstruction being planned: its answer, the chunk ranges each xorb must serve,
// and the footers read for them.
type termPlan struct {
	out    *casapi.ReconstructionV2
	needed map[hash.Hash][]casapi.ChunkRange
	metas  map[hash.Hash]*xorbMeta
}

// planTerms adds to p the terms of rec that hold bytes first to last (inclusive), cut to whole
// chunks at both ends, at most maxTerms of them (0: all).
func (s *Store) planTerms(ctx context.Context, file hash.Hash, rec *fileRecord, first, last uint64, maxTerms int, p *termPlan) error {
	var off uint64 // file offset of the current term
	for _, t := range rec.Terms {
		tEnd := off + uint64(t.UnpackedBytes) // exclusive
		if tEnd <= first {
			off = tEnd
			continue
		}
		if off > last || (maxTerms > 0 && len(p.out.Terms) == maxTerms) {
			break
		}
		m, ok := p.metas[t.Xorb]
		if !ok {
			var err error
			if m, err = s.xorbMeta(ctx, t.Xorb); err != nil {
				return fmt.Errorf("file %s: %w", file, err)
			}
			p.metas[t.Xorb] = m
		}
		if int(t.End) > m.n() || m.rawBytes(int(t.Start), int(t.End)) != t.UnpackedBytes {
			return fmt.Errorf("store: file %s: term does not match xorb %s", file, t.Xorb)
		}
		cs, ce := int(t.Start), int(t.End)
		if first > off {
			cs = m.chunkAt(int(t.Start), int(t.End), first-off)
			p.out.OffsetIntoFirstRange = first - off - uint64(m.rawBytes(int(t.Start), cs))
		}
		if last < tEnd-1 {
			ce = m.chunkAt(int(t.Start), int(t.End), last-off) + 1
		}
		r := casapi.ChunkRange{Start: uint32(cs), End: uint32(ce)}
		p.out.Terms = append(p.out.Terms, casapi.Term{Hash: t.Xorb, UnpackedLength: m.rawBytes(cs, ce), Range: r})
		p.needed[t.Xorb] = append(p.needed[t.Xorb], r)
		off = tEnd
	}
	return nil
}

// fetches fills the answer's fetch info: each xorb's needed chunk ranges, merged, with their
// byte ranges in the stored xorb.
func (p *termPlan) fetches() {
	for x, ranges := range p.needed {
		m := p.metas[x]
		fetch := casapi.XorbFetch{}
		for _, r := range mergeRanges(ranges) {
			fetch.Ranges = append(fetch.Ranges, casapi.XorbRange{
				Chunks: r,
				Bytes: casapi.ByteRange{
					Start: uint64(m.recordStart(int(r.Start))),
					End:   uint64(m.boundEnds[r.End-1]) - 1,
				},
			})
		}
		p.out.Xorbs[x] = []casapi.XorbFetch{fetch}
	}
}

// mergeRanges sorts chunk ranges and merges those that overlap or touch.
func mergeRanges(rs []casapi.ChunkRange) []casapi.ChunkRange {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b casapi.ChunkRange) int { return cmp.Compare(a.Start, b.Start) })
	out := rs[:1]
	for _, r := range rs[1:] {
		cur := &out[len(out)-1]
		if r.Start <= cur.End {
			cur.End = max(cur.End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}
