package xetfile

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// plan is a file's reconstruction: its terms in file order and where each xorb is fetched.
type plan struct {
	src   Source
	terms []term
	xorbs map[hash.Hash][]casapi.XorbFetch
}

// term is chunks [start, end) of xorb, length raw bytes at pos of the file.
type term struct {
	pos, length int64
	xorb        hash.Hash
	start, end  uint32
}

// loadPlan resolves the file's source and asks its CAS for the plan of the whole file, checking
// that its terms add up to the file's size.
func (f *File) loadPlan(ctx context.Context) (*plan, error) {
	src, err := f.resolve(ctx)
	if err != nil {
		return nil, err
	}
	f.fs.st.plans.Add(1)
	var rp *casapi.ReconstructionV2
	err = src.Retry.Do(ctx, f.fs.cfg.Log, "mount: reconstruction of "+src.File.String(), func(ctx context.Context) error {
		var err error
		rp, err = src.CAS.Reconstruct(ctx, src.File, nil)
		return err
	})
	if errors.Is(err, cas.ErrNotFound) {
		return nil, fmt.Errorf("%s does not know Xet file %s (object %s)", src.Where, src.File, f.oid)
	}
	if err != nil {
		return nil, fmt.Errorf("asking %s for the plan of %s: %w", src.Where, src.File, err)
	}
	return newPlan(src, rp, f.size)
}

// newPlan checks rp against a file of size bytes and lays out its terms.
func newPlan(src Source, rp *casapi.ReconstructionV2, size int64) (*plan, error) {
	if rp.OffsetIntoFirstRange != 0 {
		return nil, fmt.Errorf("the plan of %s starts %d bytes into its first term; a whole file's starts at 0", src.File, rp.OffsetIntoFirstRange)
	}
	p := &plan{src: src, terms: make([]term, 0, len(rp.Terms)), xorbs: rp.Xorbs}
	var pos, chunks int64
	for i, t := range rp.Terms {
		if t.Range.End <= t.Range.Start || t.UnpackedLength == 0 {
			return nil, fmt.Errorf("the plan of %s: term %d (chunks [%d, %d), %d bytes) is empty", src.File, i, t.Range.Start, t.Range.End, t.UnpackedLength)
		}
		if len(rp.Xorbs[t.Hash]) == 0 {
			return nil, fmt.Errorf("the plan of %s: term %d names xorb %s, which it gives no URL for", src.File, i, t.Hash)
		}
		p.terms = append(p.terms, term{pos: pos, length: int64(t.UnpackedLength), xorb: t.Hash, start: t.Range.Start, end: t.Range.End})
		pos += int64(t.UnpackedLength)
		chunks += int64(t.Range.End - t.Range.Start)
	}
	if err := download.CheckChunkCount(chunks, pos); err != nil {
		return nil, fmt.Errorf("the plan of %s: %w", src.File, err)
	}
	if pos != size {
		return nil, fmt.Errorf("the plan of %s adds up to %d bytes, the pointer says %d", src.File, pos, size)
	}
	return p, nil
}

// termAt is the index of the term holding byte off (off < the file's size).
func (p *plan) termAt(off int64) int {
	return sort.Search(len(p.terms), func(i int) bool { return p.terms[i].pos+p.terms[i].length > off })
}

// fetchOf is the URL and listed range of xorb x to fetch chunks [a, b) through: the listed range
// holding them, else (for a CAS whose URL grants any range) the first URL with a range of nothing.
func (p *plan) fetchOf(x hash.Hash, a, b uint32) (casapi.XorbFetch, casapi.XorbRange, bool) {
	for _, f := range p.xorbs[x] {
		for _, r := range f.Ranges {
			if r.Chunks.Start <= a && b <= r.Chunks.End {
				return f, r, true
			}
		}
	}
	return casapi.XorbFetch{}, casapi.XorbRange{}, false
}
