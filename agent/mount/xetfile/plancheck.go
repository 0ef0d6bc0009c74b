package xetfile

import (
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// checkPlan checks the plan against the file's Xet hash once the footers of all its xorbs are in
// memory (a read found them; none is fetched for this): the chunk entries its terms name must
// aggregate to the hash the object's source gave. Until then a read's chunks are verified, but
// that they are the file's rests on the plan; once checked, a plan that names other chunks fails
// the read that checked it and every later one. A plan asked again (replan: an expired URL) is a
// new plan, checked again: the check of the last one says nothing of it.
func (f *File) checkPlan(p *plan) error {
	t := &f.track
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil || t.planChecked == p {
		return t.err
	}
	if t.planOf != p { // a new plan (a replan): its check starts over
		t.planOf, t.planNext = p, 0
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
	got := b.FileSum()
	if got == p.src.File {
		t.planChecked = p
		return nil
	}
	f.fs.st.bad.Add(1)
	err := fmt.Errorf("the plan %s gave for object %s names chunks that hash to Xet file %s, not %s: it reads another file",
		p.src.Where, f.oid, got, p.src.File)
	if f.forgetGranted(p) {
		// A footer not tied to its xorb hash may be the one that is wrong (changed on the way):
		// this read fails, and the check runs again with the footers fetched again.
		t.planNext = 0
		return err
	}
	t.planChecked, t.err = p, err
	return err
}

// forgetGranted drops the footers of p's xorbs that could not be tied to their xorb hashes, and
// reports whether there was one.
func (f *File) forgetGranted(p *plan) bool {
	found := false
	for _, tm := range p.terms {
		if info := f.fs.footers.peek(tm.xorb); info != nil && info.granted {
			f.fs.footers.forget(tm.xorb, info)
			found = true
		}
	}
	return found
}
