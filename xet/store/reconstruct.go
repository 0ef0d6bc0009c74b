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
	first, last := uint64(0), rec.Size-1
	if rng != nil {
		if rng.End < rng.Start {
			return nil, invalid("range %d-%d: end before start", rng.Start, rng.End)
		}
		if rng.Start >= rec.Size {
			return nil, fmt.Errorf("file %s: range start %d is past its end: %w", file, rng.Start, ErrRangeNotSatisfiable)
		}
		first, last = rng.Start, min(rng.End, rec.Size-1)
	}

	needed := map[hash.Hash][]casapi.ChunkRange{}
	metas := map[hash.Hash]*xorbMeta{}
	var off uint64 // file offset of the current term
	for _, t := range rec.Terms {
		tEnd := off + uint64(t.UnpackedBytes) // exclusive
		if tEnd <= first {
			off = tEnd
			continue
		}
		if off > last || (maxTerms > 0 && len(out.Terms) == maxTerms) {
			break
		}
		m, ok := metas[t.Xorb]
		if !ok {
			if m, err = s.xorbMeta(ctx, t.Xorb); err != nil {
				return nil, fmt.Errorf("file %s: %w", file, err)
			}
			metas[t.Xorb] = m
		}
		if int(t.End) > m.n() || m.rawBytes(int(t.Start), int(t.End)) != t.UnpackedBytes {
			return nil, fmt.Errorf("store: file %s: term does not match xorb %s", file, t.Xorb)
		}
		cs, ce := int(t.Start), int(t.End)
		if first > off {
			cs = m.chunkAt(int(t.Start), int(t.End), first-off)
			out.OffsetIntoFirstRange = first - off - uint64(m.rawBytes(int(t.Start), cs))
		}
		if last < tEnd-1 {
			ce = m.chunkAt(int(t.Start), int(t.End), last-off) + 1
		}
		out.Terms = append(out.Terms, casapi.Term{
			Hash:           t.Xorb,
			UnpackedLength: m.rawBytes(cs, ce),
			Range:          casapi.ChunkRange{Start: uint32(cs), End: uint32(ce)},
		})
		needed[t.Xorb] = append(needed[t.Xorb], casapi.ChunkRange{Start: uint32(cs), End: uint32(ce)})
		off = tEnd
	}
	for x, ranges := range needed {
		m := metas[x]
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
		out.Xorbs[x] = []casapi.XorbFetch{fetch}
	}
	return out, nil
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
