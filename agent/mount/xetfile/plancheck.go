package xetfile

import (
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// checkPlan checks the plan against the file's Xet hash once the footers of all its xorbs are in
// memory (a read found them; none is fetched for this): the chunk entries its terms name must
// aggregate to the hash the object's source gave. Until then a read's chunks are verified, but
// that they are the file's rests on the plan; once checked, a plan that names other chunks fails
// the read that checked it and every later one.
func (f *File) checkPlan(p *plan) error {
	t := &f.track
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil || t.planChecked {
		return t.err
	}
	var b hash.MerkleBuilder
	for ; t.planNext < len(p.terms); t.planNext++ {
		if f.fs.footers.peek(p.terms[t.planNext].xorb) == nil {
			return nil // not every footer is known yet: try again at a later read
		}
	}
	for _, tm := range p.terms {
		info := f.fs.footers.peek(tm.xorb)
		if info == nil {
			t.planNext = 0 // one was forgotten meanwhile
			return nil
		}
		if err := info.checkTerm(tm); err != nil {
			t.err = err
			return err
		}
		for k := tm.start; k < tm.end; k++ {
			b.Add(hash.Entry{Hash: info.hashes[k], Size: uint64(info.size(k))})
		}
	}
	t.planChecked = true
	if got := b.FileSum(); got != p.src.File {
		f.fs.st.bad.Add(1)
		t.err = fmt.Errorf("the plan %s gave for object %s names chunks that hash to Xet file %s, not %s: it reads another file",
			p.src.Where, f.oid, got, p.src.File)
	}
	return t.err
}
