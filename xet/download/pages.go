package download

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// maxPlanPages bounds the answers one plan is assembled from: a server that always answers a term
// or two, or the same terms for every range, would otherwise be asked forever. xet-server answers
// up to 65,536 terms at a time and a file holds at most 1M of them (16 answers); the Hub does not
// cap its answers.
const maxPlanPages = 1 << 10

// Plan asks c for the plan of file's bytes rng (nil: the whole file, of size bytes; -1 unknown)
// and follows a short answer: a server may cap the terms of one answer (xet-server answers at most
// Limits.ReconstructionTerms), so while the terms cover less than was asked, the rest is asked for
// with a range starting where they end, and the answers are joined. The end of what was asked is
// rng's end, or size for a whole file (a whole file of unknown size is taken as answered).
func Plan(ctx context.Context, c cas.Client, file hash.Hash, rng *casapi.ByteRange, size int64) (*casapi.ReconstructionV2, error) {
	p, err := c.Reconstruct(ctx, file, rng)
	if err != nil {
		return nil, err
	}
	start, end := uint64(0), uint64(math.MaxUint64) // end exclusive
	switch {
	case rng != nil:
		start, end = rng.Start, rng.End+1
	case size >= 0:
		end = uint64(size)
	default:
		return p, nil
	}
	covered := start + coverage(p)
	for pages := 1; covered < end && len(p.Terms) > 0; pages++ {
		if pages >= maxPlanPages {
			return nil, fmt.Errorf("plan of %s: more than %d answers", file, maxPlanPages)
		}
		next, err := c.Reconstruct(ctx, file, &casapi.ByteRange{Start: covered, End: end - 1})
		if errors.Is(err, cas.ErrRangeNotSatisfiable) {
			break // the file ends where the terms do
		}
		if err != nil {
			return nil, err
		}
		if len(next.Terms) == 0 || next.OffsetIntoFirstRange != 0 {
			// The next answer starts at the end of a term, so at a chunk's start: nothing to skip.
			return nil, fmt.Errorf("plan of %s: the answer for bytes from %d starts %d bytes into its first term", file, covered, next.OffsetIntoFirstRange)
		}
		covered += coverage(next)
		join(p, next)
	}
	return p, nil
}

// coverage is how many bytes of the file p's terms give, past its offset into the first.
func coverage(p *casapi.ReconstructionV2) uint64 {
	var n uint64
	for _, t := range p.Terms {
		n += uint64(t.UnpackedLength)
	}
	return n - min(n, p.OffsetIntoFirstRange)
}

// join appends next's terms and fetches to p.
func join(p, next *casapi.ReconstructionV2) {
	p.Terms = append(p.Terms, next.Terms...)
	if p.Xorbs == nil {
		p.Xorbs = map[hash.Hash][]casapi.XorbFetch{}
	}
	for x, f := range next.Xorbs {
		p.Xorbs[x] = append(p.Xorbs[x], f...)
	}
}
