package download

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// DefaultSplitBytes is the default of Config.SplitBytes. A split term's parts (Request.OnPart) are
// told at the end of each range, so an interrupted download keeps whole ranges; smaller ranges
// would keep more but cost a round trip each, which a long link feels.
const DefaultSplitBytes = 16 << 20

// splitTerm is a fetched term split into ranges (splitJobs): the entries of its chunks, which
// each range fills for its own chunks, the ranges not finished yet, and whether one of them found
// no usable offsets (the whole term is then fetched once every range has finished, so that no
// range writes beside the whole term's fetch).
type splitTerm struct {
	ti       int
	ents     []hash.Entry
	fallback []*job
	mu       sync.Mutex
	left     int
	whole    bool
}

// splitRange is the kind of a job that fetches the range of chunks [start, end) of a split term.
type splitRange struct {
	term       *splitTerm
	start, end uint32
}

// splitJobs replaces each job fetching one term of more than bound bytes with jobs fetching
// ranges of about bound bytes of it (a whole number of chunks each, by the term's average chunk
// size), in file order, so that the file is written front to back while ranges are in flight: the
// SHA-256 follows the transfer instead of reading most of the file back after it, and the
// concurrency controller sees a window per range. The ranges' offsets come from the xorb's footer
// (read once per xorb, as for partly local terms); without one the whole term is fetched.
func splitJobs(js []*job, l *layout, bound int64) []*job {
	out := make([]*job, 0, len(js))
	for _, j := range js {
		if _, plain := j.kind.(fetched); !plain || len(j.terms) != 1 {
			out = append(out, j)
			continue
		}
		ti := j.terms[0]
		t := l.terms[ti]
		n := t.Range.End - t.Range.Start
		per := uint32(max(1, int64(n)*bound/int64(t.UnpackedLength)))
		if int64(t.UnpackedLength) <= bound || per >= n || l.pos[ti] < 0 || l.pos[ti]+int64(t.UnpackedLength) > l.size {
			out = append(out, j)
			continue
		}
		st := &splitTerm{ti: ti, ents: make([]hash.Entry, n), fallback: []*job{j}}
		for a := t.Range.Start; a < t.Range.End; a += per {
			st.left++
			out = append(out, &job{xorb: j.xorb, fetch: j.fetch, rng: j.rng, terms: j.terms,
				kind: &splitRange{term: st, start: a, end: min(a+per, t.Range.End)}})
		}
	}
	return out
}

// run fetches j's range of a split term; the last range of the term to finish hands the term to
// the file hash, or fetches it whole when a range found no usable offsets.
func (sp *splitRange) run(ctx context.Context, j *job, x *runner) error {
	st := sp.term
	err := sp.fetchRange(ctx, j, x)
	if err != nil && !errors.Is(err, errNoOffsets) {
		return err
	}
	st.mu.Lock()
	st.whole = st.whole || err != nil
	st.left--
	last, whole := st.left == 0, st.whole
	st.mu.Unlock()
	if !last {
		return nil
	}
	if whole {
		return fetchAll(ctx, x.fetch, st.fallback)
	}
	t := x.s.l.terms[st.ti]
	var n int64
	for _, e := range st.ents {
		n += int64(e.Size)
	}
	if n != int64(t.UnpackedLength) {
		return fmt.Errorf("term %d (xorb %s chunks [%d, %d)): decoded %d bytes, plan says %d",
			st.ti, t.Hash, t.Range.Start, t.Range.End, n, t.UnpackedLength)
	}
	return x.s.termDone(st.ti, st.ents)
}

// fetchRange fetches j's range of its split term at the offsets of the xorb's footer and checks
// what it decoded against the footer (length, chunk hashes). It fails with errNoOffsets when the
// footer cannot be had, lacks raw offsets (version 0), does not match the plan or the data, or the
// URL refuses the range.
func (sp *splitRange) fetchRange(ctx context.Context, j *job, x *runner) error {
	s := x.s
	defer s.footerDone(j.xorb)
	st := sp.term
	st.mu.Lock()
	whole := st.whole
	st.mu.Unlock()
	if whole {
		return errNoOffsets // another range of the term found none: the term is fetched whole
	}
	foot, err := s.rangeFooter(ctx, j)
	if err != nil {
		return err
	}
	t := s.l.terms[st.ti]
	if foot.RawEnds == nil {
		return fmt.Errorf("%w: a version-0 footer gives no raw offsets", errNoOffsets)
	}
	base := rawStart(foot, t.Range.Start)
	if got := rawStart(foot, t.Range.End) - base; got != uint64(t.UnpackedLength) {
		return fmt.Errorf("%w: the footer gives term %d %d raw bytes, the plan %d", errNoOffsets, st.ti, got, t.UnpackedLength)
	}
	before := int64(rawStart(foot, sp.start) - base)
	n, err := j.runSegment(ctx, x, foot, part{start: sp.start, end: sp.end}, st.ents, s.l.pos[st.ti]+before)
	if err != nil {
		return err
	}
	if want := int64(rawStart(foot, sp.end) - rawStart(foot, sp.start)); n != want {
		return fmt.Errorf("%w: chunks [%d, %d) of xorb %s decoded to %d bytes, the footer says %d", errNoOffsets, sp.start, sp.end, j.xorb, n, want)
	}
	ents := st.ents[sp.start-t.Range.Start : sp.end-t.Range.Start]
	for k, e := range ents {
		if e.Hash != foot.ChunkHashes[sp.start+uint32(k)] {
			return fmt.Errorf("%w: chunk %d of xorb %s does not hash to the footer's", errNoOffsets, sp.start+uint32(k), j.xorb)
		}
	}
	if s.onPart != nil {
		var end uint64 // the term's last range: nothing to go on from
		if sp.end < t.Range.End {
			end = recordStart(foot, sp.end)
		}
		s.onPart(span.Span{Pos: s.l.pos[st.ti] + before, Xorb: t.Hash, Start: sp.start,
			Chunks: append([]hash.Entry(nil), ents...), XorbEnd: end})
	}
	return nil
}

// rawStart is where chunk i's raw bytes start among the xorb's (the footer has RawEnds).
func rawStart(f *xorb.Footer, i uint32) uint64 {
	if i == 0 {
		return 0
	}
	return uint64(f.RawEnds[i-1])
}
