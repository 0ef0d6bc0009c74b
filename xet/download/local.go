package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// Stats says where a download's bytes came from. Local+InPlace+FetchedTerms is the file's size,
// but when a partly local term had to be fetched whole after some of it was written (its URL
// refused a range inside the listed one, or its footer's offsets were wrong): that term counts
// both ways.
type Stats struct {
	Fetched      int64 // bytes fetched from the CAS: xorb ranges (their serialized size) and Footers
	Footers      int64 // bytes of xorb footers read (for terms partly local; a URL may send up to 64 KiB for one)
	FetchedTerms int64 // bytes of the output decoded from fetched ranges
	Local        int64 // bytes copied from local files, verified
	InPlace      int64 // bytes found verified where they belong (a resumed download)
	LocalStale   int   // terms whose local bytes did not verify and were fetched instead
	// SHABehind is the most bytes of the output written ahead of the SHA-256's in-order prefix at
	// one time (0 when no SHA-256 was asked for): bytes the SHA-256 reads back from the file once
	// the prefix reaches them. Fetching in file order keeps it near the bytes in flight, so the
	// SHA-256 is done soon after the last byte arrives.
	SHABehind int64
}

// piece is part of a local term: bytes at pos of path hold chunks with entries ents.
type piece struct {
	path  string
	pos   int64
	ents  []hash.Entry
	bytes int64
}

// localSpan is a span.Span with the offsets of its chunks (off[k]: chunk k starts at Pos+off[k]).
type localSpan struct {
	span.Span
	own bool // the span lies in the output itself
	off []int64
}

func (s *localSpan) end() uint32 { return s.Start + uint32(len(s.Chunks)) }

// localPlan: the terms that local spans cover whole (the pieces to copy each from), the terms
// they cover in part (worth fetching chunk by chunk), and the spans by xorb (for resumed terms).
type localPlan struct {
	whole   map[int][]piece
	partial map[int][]part
	byXorb  map[hash.Hash][]*localSpan
	resumes map[hash.Hash]bool // xorbs with spans of an earlier attempt to resume from
}

// planLocal finds the terms that local spans cover entirely (every chunk, with the term's
// unpacked length), and those they cover in part where the local chunks are worth more than the
// requests around them (partialWorth with gap, Config.GapBytes). Spans in the output itself are
// preferred (a resumed download reads them where they are and writes nothing).
func planLocal(loc span.Local, l *layout, out string, gap int64) *localPlan {
	seen := make(map[hash.Hash]bool)
	var xs []hash.Hash
	for _, t := range l.terms {
		if !seen[t.Hash] {
			seen[t.Hash] = true
			xs = append(xs, t.Hash)
		}
	}
	lp := &localPlan{whole: make(map[int][]piece), partial: make(map[int][]part),
		byXorb: make(map[hash.Hash][]*localSpan), resumes: make(map[hash.Hash]bool)}
	for _, sp := range loc.Spans(xs) {
		if !seen[sp.Xorb] || len(sp.Chunks) == 0 || sp.Pos < 0 {
			continue
		}
		ls := &localSpan{Span: sp, own: sp.Path == out, off: make([]int64, len(sp.Chunks)+1)}
		for k, e := range sp.Chunks {
			ls.off[k+1] = ls.off[k] + int64(e.Size)
		}
		lp.byXorb[sp.Xorb] = append(lp.byXorb[sp.Xorb], ls)
		lp.resumes[sp.Xorb] = lp.resumes[sp.Xorb] || (ls.own && sp.XorbEnd != 0)
	}
	for _, ss := range lp.byXorb {
		sort.SliceStable(ss, func(a, b int) bool { return ss[a].own && !ss[b].own })
	}
	for ti, t := range l.terms {
		if l.pos[ti] < 0 || l.pos[ti]+int64(t.UnpackedLength) > l.size {
			continue
		}
		ss := lp.byXorb[t.Hash]
		if len(ss) == 0 {
			continue
		}
		if ps, ok := cover(ss, t.Range.Start, t.Range.End, int64(t.UnpackedLength)); ok {
			lp.whole[ti] = ps
		} else if parts := coverParts(ss, t.Range.Start, t.Range.End); partialWorth(parts, gap) {
			lp.partial[ti] = parts
		}
	}
	return lp
}

// cover finds pieces of spans holding chunks [start, end) in order, totalling want bytes.
func cover(spans []*localSpan, start, end uint32, want int64) ([]piece, bool) {
	var ps []piece
	var total int64
	for idx := start; idx < end; {
		sp := spanAt(spans, idx)
		if sp == nil {
			return nil, false
		}
		hi := min(end, sp.end())
		p := sp.piece(idx, hi)
		ps = append(ps, p)
		total += p.bytes
		idx = hi
	}
	return ps, total == want
}

// spanAt returns the first of spans holding chunk idx, or nil.
func spanAt(spans []*localSpan, idx uint32) *localSpan {
	for _, s := range spans {
		if s.Start <= idx && idx < s.end() {
			return s
		}
	}
	return nil
}

// piece is the part of s holding chunks [lo, hi) (inside the span).
func (s *localSpan) piece(lo, hi uint32) piece {
	a, b := lo-s.Start, hi-s.Start
	return piece{path: s.Path, pos: s.Pos + s.off[a], ents: s.Chunks[a:b], bytes: s.off[b] - s.off[a]}
}

// errLocalStale: a local file no longer holds what its span says.
var errLocalStale = errors.New("local copy changed")

// localTerm is the kind of a job that copies its one term from local pieces; fallback fetches the
// whole term when they do not verify.
type localTerm struct {
	pieces   []piece
	fallback []*job
}

// run writes j's one term from its local pieces, hashing every chunk against its entry before it
// is written; when one does not match or cannot be read (errLocalStale) the term is fetched.
func (k *localTerm) run(ctx context.Context, j *job, x *runner) error {
	return x.fallBack(ctx, j, k.copy(ctx, j, x.s), k.fallback)
}

func (k *localTerm) copy(ctx context.Context, j *job, s *sink) error {
	ti := j.terms[0]
	if err := copyPieces(ctx, s, k.pieces, s.l.pos[ti]); err != nil {
		return err
	}
	t := s.l.terms[ti]
	ents := make([]hash.Entry, 0, t.Range.End-t.Range.Start)
	for _, p := range k.pieces {
		ents = append(ents, p.ents...)
	}
	return s.termDone(ti, ents)
}

// copyPieces copies pieces to the output from out on, each chunk hash-checked first.
func copyPieces(ctx context.Context, s *sink, ps []piece, out int64) error {
	bp := writePool.Get().(*[]byte)
	defer writePool.Put(bp)
	c := localCopy{s: s, hasher: hash.NewChunkHasher(), buf: (*bp)[:writeBuf], out: out}
	for _, p := range ps {
		if err := c.piece(ctx, p); err != nil {
			return err
		}
	}
	s.addStat(func(st *Stats) { st.Local += c.copied; st.InPlace += c.inPlace })
	return nil
}

// localCopy copies pieces of one term to the output.
type localCopy struct {
	s               *sink
	hasher          *hash.ChunkHasher
	buf             []byte
	out             int64 // where the next byte goes in the output
	copied, inPlace int64
}

func (c *localCopy) piece(ctx context.Context, p piece) error {
	f, err := os.Open(p.path)
	if err != nil {
		return fmt.Errorf("%w: %v", errLocalStale, err)
	}
	defer f.Close()
	src := p.pos
	for k := 0; k < len(p.ents); {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, m := 0, k // a batch of whole chunks: ents[k:m], n bytes
		for m < len(p.ents) && n+int(p.ents[m].Size) <= len(c.buf) {
			n += int(p.ents[m].Size)
			m++
		}
		if m == k {
			return fmt.Errorf("%w: a chunk of %d bytes", errLocalStale, p.ents[k].Size)
		}
		b := c.buf[:n]
		if _, err := f.ReadAt(b, src); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("%w: %v", errLocalStale, err)
		}
		at := 0
		for _, e := range p.ents[k:m] {
			if c.hasher.Sum(b[at:at+int(e.Size)]) != e.Hash {
				return fmt.Errorf("%w: %s at byte %d does not hash to its chunk", errLocalStale, p.path, src+int64(at))
			}
			at += int(e.Size)
		}
		if err := c.emit(p.path, src, b); err != nil {
			return err
		}
		src += int64(n)
		k = m
	}
	return nil
}

// emit puts verified bytes b (read at src of path) at the output's next place: bytes already
// there (a resumed download) are only hashed, others written.
func (c *localCopy) emit(path string, src int64, b []byte) error {
	s := c.s
	if path == s.f.Name() && src == c.out {
		if s.sha != nil {
			if err := s.sha.written(c.out, b); err != nil {
				return err
			}
		}
		s.progress(int64(len(b)))
		c.inPlace += int64(len(b))
	} else {
		if err := s.write(c.out, b); err != nil {
			return err
		}
		c.copied += int64(len(b))
	}
	c.out += int64(len(b))
	return nil
}

// resumeState is the kind of a job whose one term's first chunks are already in place (an
// interrupted attempt wrote and recorded them): it checks them and fetches the rest (rng starts
// after them); fallback fetches the whole term when they do not verify.
type resumeState struct {
	pieces   []piece
	ents     []hash.Entry // of the chunks in place
	bytes    int64
	fallback []*job
}

func (rs *resumeState) run(ctx context.Context, j *job, x *runner) error {
	err := copyPieces(ctx, x.s, rs.pieces, x.s.l.pos[j.terms[0]])
	if err == nil {
		return x.fetch(ctx, j)
	}
	return x.fallBack(ctx, j, err, rs.fallback)
}

// planResume finds, for a term not copied whole, a prefix of it in place in the output (spans of
// an earlier attempt that say where the rest starts in the xorb) and returns the job fetching only
// the rest, with fb (the fetch of the whole term) as its fallback.
func planResume(byXorb map[hash.Hash][]*localSpan, l *layout, ti int, fb []*job) *job {
	t := l.terms[ti]
	if len(fb) != 1 || len(fb[0].terms) != 1 {
		return nil
	}
	rs := resumeState{fallback: fb}
	var xorbEnd uint64
	idx := t.Range.Start
	for idx < t.Range.End {
		var next *localSpan
		for _, sp := range byXorb[t.Hash] {
			if sp.own && sp.Start == idx && sp.XorbEnd != 0 && sp.end() <= t.Range.End && sp.Pos == l.pos[ti]+rs.bytes &&
				(next == nil || sp.end() > next.end()) {
				next = sp
			}
		}
		if next == nil {
			break
		}
		n := int64(len(next.Chunks))
		rs.pieces = append(rs.pieces, piece{path: next.Path, pos: next.Pos, ents: next.Chunks, bytes: next.off[n]})
		rs.ents = append(rs.ents, next.Chunks...)
		rs.bytes += next.off[n]
		idx, xorbEnd = next.end(), next.XorbEnd
	}
	r := fb[0].rng
	if idx == t.Range.Start || idx >= t.Range.End || idx < r.Chunks.Start || xorbEnd <= r.Bytes.Start || xorbEnd > r.Bytes.End {
		return nil
	}
	j := &job{xorb: t.Hash, fetch: fb[0].fetch, rng: r, terms: []int{ti}, kind: &rs}
	j.rng.Chunks.Start, j.rng.Bytes.Start = idx, xorbEnd
	return j
}
