package download

import (
	"fmt"
	"sort"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// layout places the terms of a plan in the output: term i's first byte goes to pos[i] (negative
// for the part of the first term before the requested range), and the output is size bytes.
type layout struct {
	terms []casapi.Term
	pos   []int64
	size  int64
}

// maxTermBytes bounds one term's unpacked length: a term is a range of one xorb, and a valid xorb
// holds at most MaxChunks chunks of MaxChunkRaw bytes (more than 64 MiB when a client capped it by
// its serialized size). A term is decoded chunk by chunk into the output, never held whole.
const maxTermBytes = xorb.MaxRawAccepted

// MinChunkBytes bounds how many chunks a plan may name for its bytes (CheckChunkCount). Xet's
// chunker cuts no chunk under 8 KiB but a file's last, so a plan's terms hold at most one chunk
// per 8 KiB and one more; this allows eight times that. What a reader allocates and writes goes by
// chunks (an entry and a write each), and a plan whose terms all name one range of a xorb of
// 1-byte chunks made a download of 16 MB take 627 MiB and 30 s before its file hash could fail.
const MinChunkBytes = 1 << 10

// CheckChunkCount refuses a plan whose terms name chunks chunks for bytes bytes, more than
// MinChunkBytes allows: before anything is fetched or sized by them.
func CheckChunkCount(chunks, bytes int64) error {
	if chunks > bytes/MinChunkBytes+1 {
		return fmt.Errorf("plan: %d chunks for %d bytes, more than one per %d bytes (Xet's chunks are 8 KiB or more, but a file's last)",
			chunks, bytes, MinChunkBytes)
	}
	return nil
}

// newLayout checks a plan's terms and places them. want is the number of bytes asked for (-1: the
// rest of the file).
func newLayout(p *casapi.ReconstructionV2, want int64) (*layout, error) {
	l := &layout{terms: p.Terms, pos: make([]int64, len(p.Terms))}
	var total, chunks int64
	for i, t := range p.Terms {
		if t.Range.End <= t.Range.Start {
			return nil, fmt.Errorf("plan: term %d has an empty chunk range [%d, %d)", i, t.Range.Start, t.Range.End)
		}
		if t.UnpackedLength == 0 || t.UnpackedLength > maxTermBytes {
			return nil, fmt.Errorf("plan: term %d has unpacked length %d", i, t.UnpackedLength)
		}
		// A term lies in one xorb (at most xorb.MaxChunks chunks) and every chunk holds a byte at
		// least: a larger claim is refused before anything is sized by it.
		if n := t.Range.End - t.Range.Start; n > xorb.MaxChunks || n > t.UnpackedLength {
			return nil, fmt.Errorf("plan: term %d claims %d chunks for %d bytes", i, n, t.UnpackedLength)
		}
		l.pos[i] = total - int64(p.OffsetIntoFirstRange)
		total += int64(t.UnpackedLength)
		chunks += int64(t.Range.End - t.Range.Start)
	}
	if err := CheckChunkCount(chunks, total); err != nil {
		return nil, err
	}
	if len(p.Terms) > 0 && p.OffsetIntoFirstRange >= uint64(p.Terms[0].UnpackedLength) {
		return nil, fmt.Errorf("plan: offset into first range %d is not inside the first term (%d bytes)",
			p.OffsetIntoFirstRange, p.Terms[0].UnpackedLength)
	}
	if len(p.Terms) == 0 && p.OffsetIntoFirstRange != 0 {
		return nil, fmt.Errorf("plan: no terms but an offset of %d", p.OffsetIntoFirstRange)
	}
	l.size = total - int64(p.OffsetIntoFirstRange)
	if want >= 0 && want < l.size {
		l.size = want
	}
	return l, nil
}

// planJobs returns the jobs of a plan, in output order: a local job for each term lp covers, a
// resumed fetch for each term partly in place, a job of local and fetched runs for each other term
// lp covers in part, and fetches for the other terms.
func planJobs(p *casapi.ReconstructionV2, l *layout, lp *localPlan) ([]*job, error) {
	if lp == nil {
		return jobs(p, l, func(int) bool { return true })
	}
	resumed := make(map[int]*job)
	var extra []*job
	for ti, t := range l.terms {
		if lp.whole[ti] != nil || !lp.resumes[t.Hash] {
			continue
		}
		fb, err := jobs(p, l, func(i int) bool { return i == ti })
		if err != nil {
			return nil, err
		}
		if j := planResume(lp.byXorb, l, ti, fb); j != nil {
			resumed[ti] = j
			extra = append(extra, j)
		}
	}
	partial := make(map[int][]part) // a resumed term continues from its own record, without a footer
	for ti, parts := range lp.partial {
		if resumed[ti] == nil {
			partial[ti] = parts
		}
	}
	js, err := jobs(p, l, func(i int) bool { return lp.whole[i] == nil && partial[i] == nil && resumed[i] == nil })
	if err != nil {
		return nil, err
	}
	for ti, parts := range partial {
		fb, err := jobs(p, l, func(i int) bool { return i == ti })
		if err != nil {
			return nil, err
		}
		if len(fb) == 1 && len(fb[0].terms) == 1 {
			js = append(js, &job{xorb: l.terms[ti].Hash, fetch: fb[0].fetch, rng: fb[0].rng, terms: []int{ti}, kind: &partTerm{parts: parts, fallback: fb}})
		} else {
			js = append(js, fb...)
		}
	}
	for ti, ps := range lp.whole {
		fb, err := jobs(p, l, func(i int) bool { return i == ti })
		if err != nil {
			return nil, err
		}
		js = append(js, &job{xorb: l.terms[ti].Hash, terms: []int{ti}, kind: &localTerm{pieces: ps, fallback: fb}})
	}
	js = append(js, extra...)
	inOutputOrder(js, l)
	return js, nil
}

// jobs groups the terms of a plan (those for which want says so) by the fetch range that holds
// them, so one fetch serves every term inside it; adjacent ranges of the local store (no URL) are
// merged into one fetch. Signed URLs grant exactly their listed ranges, so those are fetched as
// listed.
func jobs(p *casapi.ReconstructionV2, l *layout, want func(int) bool) ([]*job, error) {
	type key struct {
		x    hash.Hash
		f, r int
	}
	byKey := make(map[key]*job)
	var out []*job
	for i, t := range l.terms {
		if l.pos[i] >= l.size {
			break // past the requested range (the plan covers whole terms)
		}
		if !want(i) {
			continue
		}
		fs, ok := p.Xorbs[t.Hash]
		if !ok {
			return nil, fmt.Errorf("plan: term %d uses xorb %s that has no fetch info", i, t.Hash)
		}
		found := false
		for fi, f := range fs {
			for ri, r := range f.Ranges {
				if r.Chunks.Start <= t.Range.Start && t.Range.End <= r.Chunks.End {
					k := key{t.Hash, fi, ri}
					j := byKey[k]
					if j == nil {
						if r.Bytes.End < r.Bytes.Start || r.Chunks.End <= r.Chunks.Start {
							return nil, fmt.Errorf("plan: xorb %s has a bad range (chunks [%d, %d), bytes %d-%d)",
								t.Hash, r.Chunks.Start, r.Chunks.End, r.Bytes.Start, r.Bytes.End)
						}
						if r.Chunks.End-r.Chunks.Start > xorb.MaxChunks ||
							r.Bytes.Len() > uint64(r.Chunks.End-r.Chunks.Start)*(8+262144) {
							return nil, fmt.Errorf("plan: xorb %s range of %d chunks spans %d bytes", t.Hash,
								r.Chunks.End-r.Chunks.Start, r.Bytes.Len())
						}
						j = &job{xorb: t.Hash, fetch: f, rng: r, kind: fetched{}}
						byKey[k] = j
						out = append(out, j)
					}
					j.terms = append(j.terms, i)
					found = true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("plan: term %d (xorb %s chunks [%d, %d)) is in no fetch range", i, t.Hash, t.Range.Start, t.Range.End)
		}
	}
	out = mergeAdjacent(out)
	for _, j := range out {
		sort.SliceStable(j.terms, func(a, b int) bool {
			return l.terms[j.terms[a]].Range.Start < l.terms[j.terms[b]].Range.Start
		})
	}
	inOutputOrder(out, l)
	return out, nil
}

// inOutputOrder sorts jobs by the first output byte they write: the file is written front to back
// (as far as concurrency allows), which the streaming SHA-256 and the page cache both like.
func inOutputOrder(js []*job, l *layout) {
	first := make(map[*job]int64, len(js))
	for _, j := range js {
		p := l.pos[j.terms[0]]
		for _, ti := range j.terms {
			p = min(p, l.pos[ti])
		}
		first[j] = p
	}
	sort.SliceStable(js, func(a, b int) bool { return first[js[a]] < first[js[b]] })
}

// maxMerged bounds a merged fetch.
const maxMerged = 64 << 20

// mergeAdjacent merges jobs of the same xorb whose ranges touch (chunks and bytes), when they
// come from the local store (no URL to respect).
func mergeAdjacent(js []*job) []*job {
	sort.SliceStable(js, func(a, b int) bool {
		if c := js[a].xorb.Compare(js[b].xorb); c != 0 {
			return c < 0
		}
		return js[a].rng.Bytes.Start < js[b].rng.Bytes.Start
	})
	var out []*job
	for _, j := range js {
		if n := len(out); n > 0 {
			p := out[n-1]
			if p.xorb == j.xorb && p.fetch.URL == "" && j.fetch.URL == "" &&
				p.rng.Bytes.End+1 == j.rng.Bytes.Start && p.rng.Chunks.End == j.rng.Chunks.Start &&
				p.rng.Bytes.Len()+j.rng.Bytes.Len() <= maxMerged {
				p.rng.Bytes.End = j.rng.Bytes.End
				p.rng.Chunks.End = j.rng.Chunks.End
				p.terms = append(p.terms, j.terms...)
				continue
			}
		}
		out = append(out, j)
	}
	return out
}
