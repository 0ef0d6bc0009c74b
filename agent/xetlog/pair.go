package xetlog

import (
	"cmp"
	"slices"
)

// MaxPairs bounds the pairs of added and deleted LFS paths of one commit that pairByContent
// compares; a commit with more is left as git saw it.
const MaxPairs = 256

// candidates keeps the deletions of the commits that also add an LFS path without a previous
// version (the only deletions pairByContent may use) and drops the others, so that no plan is
// asked for them.
func candidates(changes []Change) []Change {
	wants := map[string]bool{}
	for _, c := range changes {
		if !c.Deleted && c.PrevOid == "" {
			wants[c.Commit] = true
		}
	}
	out := changes[:0:0]
	for _, c := range changes {
		if !c.Deleted || wants[c.Commit] {
			out = append(out, c)
		}
	}
	return out
}

// pairByContent gives an LFS path a commit adds without a previous version (git found no rename:
// the pointers of a renamed and changed file differ in most bytes) the path the same commit
// deleted whose version its chunks share most, if any: checkpoint-1000.bin replaced by
// checkpoint-2000.bin is measured against it. Pairs go greatest sharing first, each deleted path
// to one added path.
func pairByContent(changes []Change, objs map[string]*object, sizes *Sizes) {
	for start := 0; start < len(changes); {
		end := start
		for end < len(changes) && changes[end].Commit == changes[start].Commit {
			end++
		}
		pairCommit(changes[start:end], objs, sizes)
		start = end
	}
}

// pairCommit pairs within one commit's changes.
func pairCommit(cs []Change, objs map[string]*object, sizes *Sizes) {
	var adds, dels []int
	for i, c := range cs {
		switch {
		case c.Deleted && planned(objs[c.Oid]):
			dels = append(dels, i)
		case !c.Deleted && c.PrevOid == "" && planned(objs[c.Oid]):
			adds = append(adds, i)
		}
	}
	if len(adds) == 0 || len(dels) == 0 || len(adds)*len(dels) > MaxPairs {
		return
	}
	type pair struct {
		add, del int
		shared   int64
	}
	var ps []pair
	for _, a := range adds {
		for _, d := range dels {
			s, err := Compare(objs[cs[a].Oid].plan.Terms, objs[cs[d].Oid].plan.Terms, sizes)
			if err == nil && s.Shared > 0 {
				ps = append(ps, pair{a, d, s.Shared})
			}
		}
	}
	slices.SortStableFunc(ps, func(x, y pair) int { return cmp.Compare(y.shared, x.shared) })
	taken := map[int]bool{}
	for _, p := range ps {
		if taken[p.add] || taken[p.del] {
			continue
		}
		taken[p.add], taken[p.del] = true, true
		a, d := &cs[p.add], cs[p.del]
		a.PrevPath, a.PrevOid, a.PrevSize, a.ByContent = d.Path, d.Oid, d.Size, true
	}
}

// planned: the object's plan is there to compare.
func planned(ob *object) bool { return ob != nil && ob.plan != nil && ob.err == nil }
