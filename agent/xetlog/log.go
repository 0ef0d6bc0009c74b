// Package xetlog is `git xet-transfer log`: for each commit of a history and each LFS path it
// changed, how much of the new version the previous version of the path already stored. It works
// from reconstruction plans (the terms of each version's Xet file: xorb, chunk range, length) and
// the shard cache's chunk sizes, never from file data: two versions share the chunks both plans
// name (see Compare, Sizes).
//
// Stages, one file each: walk.go (git log --raw and the pointers of the blobs it names), Run below
// (where the remote keeps each object, one plan per Xet file with a bound on the requests in
// flight, the sizes the plans and the shard cache give), pair.go (renamed and changed files, which
// git does not see as renames, found by the chunks they share), overlap.go (the comparison).
package xetlog

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// Source is what Run asks of the remote (client.Plans).
type Source interface {
	Locate(ctx context.Context, objs []lfsbatch.Object) ([]client.Located, error)
	Plan(ctx context.Context, l client.Located) (*casapi.ReconstructionV2, error)
	ChunkSizes(ctx context.Context, l client.Located, xorbs []hash.Hash) (map[hash.Hash][]uint32, error)
}

// Options say what Run walks and where it asks.
type Options struct {
	Git    gitrepo.Git
	Revs   []string // git log's revisions (none: HEAD)
	Paths  []string // limit to these paths (git pathspecs)
	Source Source
	// Jobs bounds the plan requests in flight (default DefaultJobs).
	Jobs int
}

// DefaultJobs is the default bound of plan requests in flight.
const DefaultJobs = 8

// Record is one LFS path one commit changed. Shared, New and Saved are set only when State is
// "xet": the byte counts are exact unless Exact is false (see Saving).
type Record struct {
	Commit   string `json:"commit"`
	Path     string `json:"path"`
	Oid      string `json:"oid"`
	Size     int64  `json:"size"`
	PrevPath string `json:"previous_path,omitempty"`
	PrevOid  string `json:"previous_oid,omitempty"`
	// PrevByContent: the previous version is that of a path the commit deleted, chosen for the
	// chunks it shares (git found no rename), not the same path's or a git rename's.
	PrevByContent bool     `json:"previous_by_content,omitempty"`
	Shared        *int64   `json:"shared_bytes"`
	New           *int64   `json:"new_bytes"`
	Saved         *float64 `json:"saved"` // 1 - New/Size
	Exact         bool     `json:"exact"`
	State         string   `json:"state"`                    // xet, missing (not on the remote), lfs (a plain LFS object), error
	PrevState     string   `json:"previous_state,omitempty"` // the previous version's, when there is one
	Error         string   `json:"error,omitempty"`
}

// object is what Run learned of one LFS object.
type object struct {
	size int64 // the pointer's
	at   client.Located
	plan *casapi.ReconstructionV2
	err  error // the plan could not be had or used
}

// Run lists the changes of o.Revs and measures each against its previous version. Objects the
// remote lacks or keeps outside Xet, and plans that fail, are records of their own (State, Error);
// the error is git's, or the context's.
func Run(ctx context.Context, o Options) ([]Record, error) {
	changes, err := Changes(ctx, o.Git, o.Revs, o.Paths)
	if err != nil {
		return nil, err
	}
	changes = candidates(changes)
	objs, err := locate(ctx, o.Source, changes)
	if err != nil {
		return nil, err
	}
	if err := plan(ctx, o, objs); err != nil {
		return nil, err
	}
	sizes, err := learn(ctx, o.Source, objs)
	if err != nil {
		return nil, err
	}
	pairByContent(changes, objs, sizes)
	out := make([]Record, 0, len(changes))
	for _, c := range changes {
		if !c.Deleted {
			out = append(out, record(c, objs[c.Oid], objs[c.PrevOid], sizes))
		}
	}
	return out, nil
}

// locate asks where the remote keeps each object the changes name, once per oid.
func locate(ctx context.Context, src Source, changes []Change) (map[string]*object, error) {
	objs := map[string]*object{}
	var list []lfsbatch.Object
	add := func(oid string, size int64) {
		if oid != "" && objs[oid] == nil {
			objs[oid] = &object{size: size}
			list = append(list, lfsbatch.Object{OID: oid, Size: size})
		}
	}
	for _, c := range changes {
		add(c.Oid, c.Size)
		add(c.PrevOid, c.PrevSize)
	}
	if len(list) == 0 {
		return objs, nil
	}
	at, err := src.Locate(ctx, list)
	if err != nil {
		return nil, err
	}
	for i, l := range list {
		objs[l.OID].at = at[i]
	}
	return objs, nil
}

// plan fetches the plan of each Xet file once (objects of one file share it), at most o.Jobs at a
// time, and checks it against the pointer's size.
func plan(ctx context.Context, o Options, objs map[string]*object) error {
	type fileKey struct {
		where string
		file  hash.Hash
	}
	byFile := map[fileKey][]*object{}
	sizeOf := map[fileKey]int64{}
	for _, ob := range objs {
		if ob.at.State == client.InXet {
			k := fileKey{ob.at.Where, ob.at.File}
			byFile[k] = append(byFile[k], ob)
			sizeOf[k] = ob.size
		}
	}
	jobs := o.Jobs
	if jobs <= 0 {
		jobs = DefaultJobs
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	for k, obs := range byFile {
		g.Go(func() error {
			p, err := o.Source.Plan(gctx, obs[0].at)
			if err == nil {
				err = checkPlan(p, sizeOf[k])
			}
			for _, ob := range obs {
				ob.plan, ob.err = p, err
			}
			return gctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// checkPlan refuses a plan that is not of a whole file of size bytes: its terms must add up to the
// size, each a non-empty chunk range.
func checkPlan(p *casapi.ReconstructionV2, size int64) error {
	if p == nil {
		return fmt.Errorf("the CAS answered no plan")
	}
	var sum int64
	for _, t := range p.Terms {
		if t.Range.End <= t.Range.Start {
			return fmt.Errorf("the CAS's plan has a term of xorb %s with chunk range %d-%d", t.Hash, t.Range.Start, t.Range.End)
		}
		sum += int64(t.UnpackedLength)
	}
	if p.OffsetIntoFirstRange != 0 || sum != size {
		return fmt.Errorf("the CAS's plan covers %d bytes from offset %d, not the pointer's %d", sum, p.OffsetIntoFirstRange, size)
	}
	return nil
}

// learn gathers what the plans and the shard caches say of chunk sizes: every term of every plan,
// then the chunk sizes of their xorbs each CAS's shard cache lists (one read per CAS).
func learn(ctx context.Context, src Source, objs map[string]*object) (*Sizes, error) {
	sizes := NewSizes()
	xorbsAt := map[string][]hash.Hash{}
	listed := map[string]map[hash.Hash]bool{}
	at := map[string]client.Located{}
	seen := map[*casapi.ReconstructionV2]bool{}
	for _, ob := range objs {
		if ob.plan == nil || ob.err != nil || seen[ob.plan] {
			continue
		}
		seen[ob.plan] = true
		sizes.LearnTerms(ob.plan.Terms)
		w := ob.at.Where
		if listed[w] == nil {
			listed[w], at[w] = map[hash.Hash]bool{}, ob.at
		}
		for _, t := range ob.plan.Terms {
			if !listed[w][t.Hash] {
				listed[w][t.Hash] = true
				xorbsAt[w] = append(xorbsAt[w], t.Hash)
			}
		}
	}
	for where, xs := range xorbsAt {
		known, err := src.ChunkSizes(ctx, at[where], xs)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue // the plans' lengths are what is known
		}
		for x, s := range known {
			sizes.LearnChunks(x, s)
		}
	}
	return sizes, nil
}

// record is one change's Record.
func record(c Change, cur, prev *object, sizes *Sizes) Record {
	r := Record{Commit: c.Commit, Path: c.Path, Oid: c.Oid, Size: c.Size, PrevPath: c.PrevPath, PrevOid: c.PrevOid, PrevByContent: c.ByContent}
	r.State = cur.at.State.String()
	var prevTerms []casapi.Term
	if prev != nil {
		r.PrevState = prev.at.State.String()
		if prev.plan != nil && prev.err == nil {
			prevTerms = prev.plan.Terms
		}
	}
	switch {
	case cur.at.State == client.Failed:
		r.Error = "the remote could not say where it keeps the object"
		if cur.at.Err != nil {
			r.Error = cur.at.Err.Error()
		}
		return r
	case cur.at.State != client.InXet:
		return r
	case cur.err != nil:
		r.State, r.Error = "error", cur.err.Error()
		return r
	}
	s, err := Compare(cur.plan.Terms, prevTerms, sizes)
	if err != nil {
		r.State, r.Error = "error", err.Error()
		return r
	}
	saved := 0.0
	if c.Size > 0 {
		saved = 1 - float64(s.New)/float64(c.Size)
	}
	r.Shared, r.New, r.Saved, r.Exact = &s.Shared, &s.New, &saved, s.Exact
	return r
}
