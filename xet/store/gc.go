package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// Garbage collection removes xorbs no file record names: the uploads of clients that died (or were
// cut off) between their xorbs and their shard. File records, SHA-256 mappings and dedupe entries
// are never removed (a dedupe entry only names xorbs a file record names), so a xorb once
// referenced stays referenced, and only never-registered xorbs are garbage.
//
// Deleting is in two steps, each at least the grace period after the blob's last write, so that it
// is safe while uploads go on, from any number of server instances:
//  1. a xorb unreferenced and older than the grace period is moved to trash/ (not deleted);
//  2. a later run deletes a trash entry older than the grace period that is still unreferenced, and
//     moves back any that a file record names by then.
//
// A registration confirms each xorb its files name with the backend (not a cache), restoring it
// from trash/ if needed, writes its records within RegisterWithin of that confirmation (else it
// fails, retryably), and then confirms them again, moving back any that gc moved meanwhile. gc,
// after its moves, reads the records written since its mark and moves back what they name. So no
// record names a xorb only the trash holds for longer than one of those steps (a client fetching
// straight from a bucket cannot restore one); readers that miss a xorb look in trash/ too
// (restoreXorb), and the next step 2 (a grace period later, with grace > RegisterWithin) restores
// whatever a record names. The grace period also protects a xorb uploaded for a shard still in
// flight.
//
// A backend that packs small blobs (blob/fs) moves and deletes them by rewriting their packs
// (blob.PackSweeper). A pack a running writer holds is left for a later run (counted as Busy).

// RegisterWithin bounds the time from a registration's check that its xorbs exist to the write of
// its records (see Collect). The grace period of gc must exceed it.
const RegisterWithin = 10 * time.Minute

// DefaultGrace is gc's default grace period.
const DefaultGrace = 24 * time.Hour

const trashPrefix = "trash/"

// GCOptions configures Collect.
type GCOptions struct {
	Grace  time.Duration // default DefaultGrace; must exceed RegisterWithin unless Unsafe
	DryRun bool          // report only
	Unsafe bool          // allow a grace at or under RegisterWithin (tests whose registrations are quick)
}

// GCReport is what Collect did (or, with DryRun, would do).
type GCReport struct {
	Xorbs, Referenced int
	Young             int   // unreferenced, within the grace period: kept for now
	Trashed           int   // unreferenced and old: moved to trash/
	TrashedBytes      int64 //
	Deleted           int   // trash entries deleted for good
	DeletedBytes      int64 //
	Restored          int   // trash entries a file record names again: moved back
	Busy              int   // due, but in a pack a running writer holds: left for a later run
	DryRun            bool
}

// String is the report for people.
func (r *GCReport) String() string {
	verb := ""
	if r.DryRun {
		verb = " (dry run: nothing changed)"
	}
	return fmt.Sprintf("%d xorbs, %d referenced, %d unreferenced within the grace period; moved to trash %d (%d bytes); "+
		"deleted from trash %d (%d bytes); restored from trash %d; left in packs in use %d%s",
		r.Xorbs, r.Referenced, r.Young, r.Trashed, r.TrashedBytes, r.Deleted, r.DeletedBytes, r.Restored, r.Busy, verb)
}

// count adds the steps done to the report.
func (r *GCReport) count(steps []gcStep) {
	for _, st := range steps {
		switch st.kind {
		case stepTrash:
			r.Trashed++
			r.TrashedBytes += st.blob.Size
		case stepDelete:
			r.Deleted++
			r.DeletedBytes += st.blob.Size
		case stepRestore:
			r.Restored++
		}
	}
}

// gcStep is one thing a run does to one blob.
type gcStep struct {
	blob blob.Info
	to   string // new name; "" deletes
	kind int    // stepTrash, stepDelete, stepRestore
}

const (
	stepTrash = iota
	stepDelete
	stepRestore
)

// Collect runs garbage collection (see above). An unreadable file record stops it before anything
// is moved: what it names cannot be known.
func (m *Maint) Collect(ctx context.Context, opts GCOptions) (*GCReport, error) {
	sw := m.s.be
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Grace <= RegisterWithin && !opts.Unsafe {
		return nil, fmt.Errorf("gc: a grace period of %v is not above the %v a registration may take", opts.Grace, RegisterWithin)
	}
	cutoff := m.s.now().Add(-opts.Grace)
	m.s.log.Info().Bool("dry_run", opts.DryRun).Msg("gc started")
	trash, err := sw.ListInfo(ctx, trashPrefix+"xorbs/")
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	seen := map[string]bool{}
	refs, err := m.referencedXorbs(ctx, seen)
	if err != nil {
		return nil, err
	}
	r := &GCReport{DryRun: opts.DryRun}
	steps, err := m.trashSteps(ctx, trash, refs, cutoff)
	if err != nil {
		return r, err
	}
	xorbs, err := sw.ListInfo(ctx, "xorbs/")
	if err != nil {
		return r, fmt.Errorf("gc: %w", err)
	}
	for _, x := range xorbs {
		kind, h, ok := classify(x.Name)
		if !ok || kind != "xorbs" {
			continue // fsck reports foreign names
		}
		r.Xorbs++
		switch {
		case refs[h]:
			r.Referenced++
		case !x.ModTime.Before(cutoff):
			r.Young++
		default:
			steps = append(steps, gcStep{x, trashPrefix + x.Name, stepTrash})
		}
	}
	if !opts.DryRun {
		m.s.log.Info().Int("xorbs", r.Xorbs).Int("steps", len(steps)).Msg("gc: moving and deleting")
		if steps, err = m.applySteps(ctx, sw, steps, r); err != nil {
			return r, err
		}
		if steps, err = m.recheckMoved(ctx, sw, steps, seen, r); err != nil {
			return r, err
		}
	}
	r.count(steps)
	m.s.log.Info().Str("report", r.String()).Msg("gc done")
	if !opts.DryRun {
		m.s.obs.Collected(r.DeletedBytes)
	}
	return r, nil
}

// trashSteps is step 2: trash entries older than cutoff are deleted, and referenced ones moved back
// (or dropped, when the xorb was stored again meanwhile).
func (m *Maint) trashSteps(ctx context.Context, trash []blob.Info, refs map[hash.Hash]bool, cutoff time.Time) ([]gcStep, error) {
	var steps []gcStep
	for _, t := range trash {
		name := strings.TrimPrefix(t.Name, trashPrefix)
		kind, h, ok := classify(name)
		if !ok || kind != "xorbs" {
			continue
		}
		switch {
		case refs[h]:
			stored, err := m.s.be.Exists(ctx, name)
			if err != nil {
				return nil, fmt.Errorf("gc: %w", err)
			}
			to := name
			if stored {
				to = ""
			}
			steps = append(steps, gcStep{t, to, stepRestore})
		case t.ModTime.Before(cutoff):
			steps = append(steps, gcStep{t, "", stepDelete})
		}
	}
	return steps, nil
}

// applySteps moves and deletes; it returns the steps done (packed ones in a busy pack are not).
func (m *Maint) applySteps(ctx context.Context, sw blob.Backend, steps []gcStep, r *GCReport) ([]gcStep, error) {
	var done []gcStep
	packed := map[string]gcStep{}
	var changes []blob.PackChange
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return done, fmt.Errorf("gc: %w", err)
		}
		if st.blob.Packed {
			packed[st.blob.Name] = st
			changes = append(changes, blob.PackChange{Name: st.blob.Name, To: st.to})
			continue
		}
		var err error
		if st.to == "" {
			err = sw.Delete(ctx, st.blob.Name)
		} else {
			err = sw.Move(ctx, st.blob.Name, st.to)
		}
		if errors.Is(err, ErrNotFound) {
			continue // a reader restored it, or another gc run got there first
		}
		if err != nil {
			return done, fmt.Errorf("gc: %w", err)
		}
		done = append(done, st)
		m.dropMeta(st.blob.Name)
	}
	if len(changes) == 0 {
		return done, nil
	}
	ps, ok := m.s.raw.(blob.PackSweeper)
	if !ok {
		return done, errors.New("gc: packed blobs on a backend that cannot rewrite packs")
	}
	applied, err := ps.SweepPacked(ctx, changes)
	for _, c := range applied {
		done = append(done, packed[c.Name])
		m.dropMeta(c.Name)
	}
	r.Busy = len(changes) - len(applied)
	if err != nil {
		return done, fmt.Errorf("gc: %w", err)
	}
	return done, nil
}

// recheckMoved reads the file records written since the mark and moves back at once what they
// name among the xorbs just moved to the trash: a registration that confirmed a xorb before the
// move and wrote its records before this listing (one writing after it finds the xorb gone when
// it checks again, and restores it itself). It returns the steps that still stand.
func (m *Maint) recheckMoved(ctx context.Context, sw blob.Backend, steps []gcStep, seen map[string]bool, r *GCReport) ([]gcStep, error) {
	late, err := m.referencedXorbs(ctx, seen)
	if err != nil || len(late) == 0 {
		return steps, err
	}
	var kept []gcStep
	for _, st := range steps {
		_, h, _ := classify(strings.TrimPrefix(st.blob.Name, trashPrefix))
		if st.kind != stepTrash || !late[h] {
			kept = append(kept, st)
			continue
		}
		if _, err := m.s.restoreXorb(ctx, h); err != nil {
			return kept, fmt.Errorf("gc: moving back xorb %s, named by a record written meanwhile: %w", h, err)
		}
		r.Restored++
	}
	return kept, nil
}

// dropMeta forgets the cached footer of a xorb gc moved.
func (m *Maint) dropMeta(name string) {
	if kind, h, ok := classify(strings.TrimPrefix(name, trashPrefix)); ok && kind == "xorbs" {
		m.s.meta.drop(h)
	}
}

// referencedXorbs reads every file record not in seen (adding it there) and returns the xorbs
// their terms name.
func (m *Maint) referencedXorbs(ctx context.Context, seen map[string]bool) (map[hash.Hash]bool, error) {
	files, err := m.s.be.List(ctx, "files/")
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	var mu sync.Mutex
	refs := map[hash.Hash]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16) // object stores answer one GET per record: keep a few in flight
	for _, name := range files {
		if gctx.Err() != nil {
			break // stopped, or a record failed: g.Wait says which
		}
		if _, _, ok := classify(name); !ok || seen[name] {
			continue
		}
		seen[name] = true
		g.Go(func() error {
			b, err := m.s.readEntry(gctx, name)
			if errors.Is(err, ErrNotFound) {
				return nil // listed, then gone: records are never removed, so a foreign file
			}
			if err != nil {
				return fmt.Errorf("gc: reading %s (nothing was collected): %w", name, err)
			}
			rec, err := parseFileRecord(name, b)
			if err != nil {
				return fmt.Errorf("gc: %s (nothing was collected): %w", name, err)
			}
			mu.Lock()
			for _, t := range rec.Terms {
				refs[t.Xorb] = true
			}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	return refs, nil
}

// restoreXorb moves xorb h back from trash/ (a reader or a registration needs it); false when it
// is not there either.
func (s *Store) restoreXorb(ctx context.Context, h hash.Hash) (bool, error) {
	err := s.be.Move(ctx, trashPrefix+xorbName(h), xorbName(h))
	if errors.Is(err, blob.ErrPacked) { // copied back; the next gc drops the trash copy
		var b []byte
		if b, err = s.readEntry(ctx, trashPrefix+xorbName(h)); err == nil {
			_, err = s.be.Create(ctx, xorbName(h), bytes.NewReader(b))
		}
	}
	switch {
	case err == nil:
		s.log.Warn().Str("xorb", h.String()).Msg("xorb restored from gc's trash")
		return true, nil
	case errors.Is(err, ErrNotFound):
		// Another reader may have restored it a moment ago.
		return s.be.Exists(ctx, xorbName(h))
	}
	return false, err
}
