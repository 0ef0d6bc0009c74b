package download

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// DefaultGapBytes is the default of Config.GapBytes.
const DefaultGapBytes = 256 << 10

// part is a run of a term's chunks [start, end) of its xorb: in local pieces when local is set,
// else to be fetched.
type part struct {
	start, end uint32
	local      []piece
}

func (p part) localBytes() int64 {
	var n int64
	for _, pc := range p.local {
		n += pc.bytes
	}
	return n
}

// coverParts splits chunks [start, end) into runs that spans hold (pieces, as cover finds them)
// and runs that no span holds.
func coverParts(spans []*localSpan, start, end uint32) []part {
	var out []part
	for idx := start; idx < end; {
		n := len(out)
		sp := spanAt(spans, idx)
		if sp == nil {
			if n > 0 && out[n-1].local == nil {
				out[n-1].end = idx + 1
			} else {
				out = append(out, part{start: idx, end: idx + 1})
			}
			idx++
			continue
		}
		hi := min(end, sp.end())
		if n > 0 && out[n-1].local != nil {
			out[n-1].end = hi
			out[n-1].local = append(out[n-1].local, sp.piece(idx, hi))
		} else {
			out = append(out, part{start: idx, end: hi, local: []piece{sp.piece(idx, hi)}})
		}
		idx = hi
	}
	return out
}

// partialWorth says whether a term split into parts is worth fetching chunk by chunk: some chunks
// are missing and some local run holds gap bytes or more (a smaller one saves less than the
// requests and the footer read it costs).
func partialWorth(parts []part, gap int64) bool {
	missing, worth := false, false
	for _, p := range parts {
		if p.local == nil {
			missing = true
		} else if p.localBytes() >= gap {
			worth = true
		}
	}
	return missing && worth
}

// errNoOffsets: the chunk offsets of a partly local term's xorb are not to be had (the CAS offers
// no footer, or it does not match the plan); the term is fetched whole.
var errNoOffsets = errors.New("no chunk offsets for the xorb")

// footerRead is what reading a xorb's footer gave: the footer, or why there is none (a CAS that
// offers none says so once per download, not once per term).
type footerRead struct {
	f   *xorb.Footer
	err error
}

// footer returns the footer of xorb x, read through fetch f the first time a term of x asks for
// it in this download (one read per xorb, whichever term asks first; the others wait for it, see
// internal/lazy; a read cut short by its caller's end is not kept). The caller calls footerDone(x)
// once it no longer needs it, so a download holds the footers of the xorbs in work only (up to 40
// bytes per chunk each).
func (s *sink) footer(ctx context.Context, x hash.Hash, f casapi.XorbFetch) (*xorb.Footer, error) {
	r, err := s.footers.Get(ctx, x, func(ctx context.Context) (footerRead, error) {
		foot, err := s.readFooter(ctx, x, f)
		if err != nil && ctx.Err() != nil {
			return footerRead{}, err
		}
		if err == nil {
			n := int64(foot.Size())
			s.addStat(func(st *Stats) { st.Fetched += n; st.Footers += n })
		}
		return footerRead{foot, err}, nil
	})
	if err != nil {
		return nil, err
	}
	return r.f, r.err
}

// rangeFooter returns the footer of j's xorb (footer), checked against j's range (matchRange); a
// footer that cannot be had is errNoOffsets (the term is then fetched whole), unless ctx ended.
func (s *sink) rangeFooter(ctx context.Context, j *job) (*xorb.Footer, error) {
	foot, err := s.footer(ctx, j.xorb, j.fetch)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", errNoOffsets, err)
	}
	return foot, matchRange(foot, j.rng)
}

// footerDone says a partly local term of xorb x has finished with its footer: the last of the
// terms newSink counted lets it go (one it did not count keeps it for the download).
func (s *sink) footerDone(x hash.Hash) {
	s.mu.Lock()
	n, counted := s.footerUses[x]
	if counted {
		if n--; n > 0 {
			s.footerUses[x] = n
		} else {
			delete(s.footerUses, x)
		}
	}
	s.mu.Unlock()
	if counted && n <= 0 {
		s.footers.Delete(x)
	}
}

// recordStart and recordEnd are where record i starts and ends (exclusive) in the xorb.
func recordStart(f *xorb.Footer, i uint32) uint64 {
	if i == 0 {
		return 0
	}
	return uint64(f.BoundaryEnds[i-1])
}

func recordEnd(f *xorb.Footer, i uint32) uint64 { return uint64(f.BoundaryEnds[i]) }

// matchRange checks that the footer describes the listed range r holding the term (its chunks
// begin and end where r says): only then are its offsets the URL's.
func matchRange(f *xorb.Footer, r casapi.XorbRange) error {
	if r.Chunks.End > uint32(len(f.BoundaryEnds)) || r.Chunks.Start >= r.Chunks.End {
		return fmt.Errorf("%w: the footer lists %d chunks, the plan's range ends at chunk %d", errNoOffsets, len(f.BoundaryEnds), r.Chunks.End)
	}
	if recordStart(f, r.Chunks.Start) != r.Bytes.Start || recordEnd(f, r.Chunks.End-1) != r.Bytes.End+1 {
		return fmt.Errorf("%w: the footer puts chunks [%d, %d) at bytes %d-%d, the plan at %s", errNoOffsets,
			r.Chunks.Start, r.Chunks.End, recordStart(f, r.Chunks.Start), recordEnd(f, r.Chunks.End-1)-1, r.Bytes.Header())
	}
	return nil
}

// segments turns parts into the runs a job copies or fetches: a local run whose chunk hashes are
// not the footer's is fetched; a local run between two fetched ones spanning fewer than gap bytes
// of the xorb is fetched with them (one request instead of two); adjacent fetched runs are merged.
func segments(parts []part, f *xorb.Footer, gap int64) []part {
	marked := make([]part, len(parts))
	for i, p := range parts {
		marked[i] = p
		if p.local == nil {
			continue
		}
		inner := i > 0 && i < len(parts)-1
		if !sameHashes(p, f) || (inner && int64(recordEnd(f, p.end-1)-recordStart(f, p.start)) < gap) {
			marked[i].local = nil
		}
	}
	var out []part
	for _, p := range marked {
		if n := len(out); n > 0 && p.local == nil && out[n-1].local == nil {
			out[n-1].end = p.end
			continue
		}
		out = append(out, p)
	}
	return out
}

// sameHashes says whether the local chunks of p have the hashes the footer gives those chunks.
func sameHashes(p part, f *xorb.Footer) bool {
	idx := p.start
	for _, pc := range p.local {
		for _, e := range pc.ents {
			if int(idx) >= len(f.ChunkHashes) || f.ChunkHashes[idx] != e.Hash {
				return false
			}
			idx++
		}
	}
	return true
}

// segState is the kind of a job that is one fetched run of a partly local term: its first chunk
// starts before bytes into the term, and the entries of its chunks go to ents (the term's, by
// chunk).
type segState struct {
	before int64
	ents   []hash.Entry
}

func (segState) run(ctx context.Context, j *job, x *runner) error { return x.fetch(ctx, j) }

// partTerm is the kind of a job whose one term lies in local files in part: its parts, local or
// not (rng is the listed range holding the term); fallback fetches the whole term.
type partTerm struct {
	parts    []part
	fallback []*job
}

// run writes j's one term from its parts; the whole term is fetched when the footer gives no
// usable offsets (errNoOffsets) or a local run's bytes do not verify.
func (k *partTerm) run(ctx context.Context, j *job, x *runner) error {
	err := k.runParts(ctx, j, x)
	if errors.Is(err, errNoOffsets) {
		x.log.Debug().Err(err).Int("term", j.terms[0]).Msg("download: fetching the partly local term whole")
		return fetchAll(ctx, x.fetch, k.fallback)
	}
	return x.fallBack(ctx, j, err, k.fallback)
}

// runParts writes j's one term from its parts: local runs are copied (each chunk hash-checked),
// the others fetched as ranges of the xorb found with its footer, each retried on its own by
// x.fetch. It fails with errNoOffsets (the term is then fetched whole) when the footer cannot be
// had or does not match the plan.
func (k *partTerm) runParts(ctx context.Context, j *job, x *runner) error {
	s := x.s
	ti := j.terms[0]
	t := s.l.terms[ti]
	if s.merkle == nil {
		return errNoOffsets // only whole, verified downloads use local chunks
	}
	foot, err := s.rangeFooter(ctx, j)
	defer s.footerDone(j.xorb)
	if err != nil {
		return err
	}
	ents := make([]hash.Entry, t.Range.End-t.Range.Start)
	out := s.l.pos[ti]
	for _, sg := range segments(k.parts, foot, s.gap) {
		n, err := j.runSegment(ctx, x, foot, sg, ents, out)
		if err != nil {
			return err
		}
		out += n
	}
	if got := out - s.l.pos[ti]; got != int64(t.UnpackedLength) {
		return fmt.Errorf("term %d (xorb %s chunks [%d, %d)): decoded %d bytes, plan says %d",
			ti, t.Hash, t.Range.Start, t.Range.End, got, t.UnpackedLength)
	}
	return s.termDone(ti, ents)
}

// runSegment copies or fetches the run sg of j's term to the output at out, its chunk entries into
// ents, and returns its length. A local run that does not verify is fetched instead.
func (j *job) runSegment(ctx context.Context, x *runner, foot *xorb.Footer, sg part, ents []hash.Entry, out int64) (int64, error) {
	s := x.s
	ti := j.terms[0]
	first := s.l.terms[ti].Range.Start
	if sg.local != nil {
		err := copyPieces(ctx, s, sg.local, out)
		if err == nil {
			k := sg.start - first
			for _, pc := range sg.local {
				k += uint32(copy(ents[k:], pc.ents))
			}
			return sg.localBytes(), nil
		}
		if !errors.Is(err, errLocalStale) {
			return 0, err
		}
		s.addStat(func(st *Stats) { st.LocalStale++ })
	}
	sub := &job{xorb: j.xorb, fetch: j.fetch, terms: []int{ti}, kind: &segState{before: out - s.l.pos[ti], ents: ents},
		rng: casapi.XorbRange{Chunks: casapi.ChunkRange{Start: sg.start, End: sg.end},
			Bytes: casapi.ByteRange{Start: recordStart(foot, sg.start), End: recordEnd(foot, sg.end-1) - 1}}}
	if err := x.fetch(ctx, sub); err != nil {
		if ctx.Err() == nil && !retry.IsRetryable(err) {
			// A URL that grants only its listed ranges whole (403: or expired), or records that
			// are not where the footer says: the whole term's fetch is the plan's own word (it
			// re-plans when the URL expired, and fails when the term is bad too).
			return 0, fmt.Errorf("%w: range %s: %w", errNoOffsets, sub.rng.Bytes.Header(), err)
		}
		return 0, err
	}
	var n int64
	for _, e := range ents[sg.start-first : sg.end-first] {
		n += int64(e.Size)
	}
	return n, nil
}
