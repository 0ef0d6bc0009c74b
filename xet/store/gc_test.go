package store

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	blobfs "github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/fs"

	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// conformGC runs garbage collection on a backend through its life: young orphans kept, old ones
// trashed then deleted, a dry run changing nothing, a registration restoring a trashed xorb, a
// record written in the race with the move (the xorb is restored by the next run), referenced
// xorbs never touched. On blob/fs, the packs holding small xorbs are rewritten.
func conformGC(t *testing.T, be blob.Backend) {
	ctx := context.Background()
	var offset atomic.Int64 // how far the store's clock is ahead of the real one
	s, err := Open("", Options{Backend: be, Now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	r := loadRef(t)
	a, b, c, d := r.xorb(0, 1, 2), r.xorb(3, 4), r.xorb(5, 6), r.xorb(7, 8)
	fa, fc, fd := r.file(seg{a, 0, 3}), r.file(seg{c, 0, 2}), r.file(seg{d, 0, 2})
	for _, x := range []*testXorb{a, b, c, d} {
		mustPutXorb(t, s, x)
	}
	if _, err := s.PutShard(ctx, "", r.shardBytes([]*testFile{fa}, a)); err != nil {
		t.Fatal(err)
	}
	// fd's plan is made now, while d is stored, and written after gc moved d: a registration that
	// confirmed its xorbs just before the move.
	sh, err := shard.Parse(r.shardBytes([]*testFile{fd}, d))
	if err != nil {
		t.Fatal(err)
	}
	v := validator{s: s}
	racing, err := v.checkShard(ctx, sh)
	if err != nil {
		t.Fatal(err)
	}
	collect := func(ahead time.Duration, dry bool) *GCReport {
		t.Helper()
		offset.Store(int64(ahead))
		be.Close() // as after an idle writer's time: the pack this test wrote is free to rewrite
		rep, err := NewMaint(s).Collect(ctx, GCOptions{DryRun: dry})
		if err != nil {
			t.Fatalf("gc at +%v: %v", ahead, err)
		}
		t.Logf("gc at +%v: %s", ahead, rep)
		return rep
	}
	has := func(x *testXorb) bool {
		ok, err := s.HasXorb(ctx, x.hash)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	if rep := collect(time.Hour, false); rep.Young != 3 || rep.Trashed != 0 || rep.Referenced != 1 {
		t.Fatalf("within the grace period: %s", rep)
	}
	if rep := collect(25*time.Hour, true); !has(b) || rep.Trashed != 3 {
		t.Fatalf("dry run: %s; b stored: %v", rep, has(b))
	}
	rep := collect(25*time.Hour, false)
	if rep.Trashed != 3 || has(b) || has(c) || has(d) || !has(a) {
		t.Fatalf("after gc: %s; stored a %v b %v c %v d %v", rep, has(a), has(b), has(c), has(d))
	}
	// A client that uploaded c earlier (or found it stored) registers it now: restored.
	if _, err := s.PutShard(ctx, "", r.shardBytes([]*testFile{fc}, c)); err != nil {
		t.Fatalf("registering a file whose xorb gc had moved to trash: %v", err)
	}
	if _, err := s.register(ctx, "", nil, racing); err != nil {
		t.Fatal(err)
	}
	rep = collect(50*time.Hour, false)
	if rep.Deleted != 1 || rep.Restored < 1 || rep.Referenced+rep.Restored < 3 {
		t.Fatalf("second gc: %s", rep)
	}
	if has(b) || !has(a) || !has(c) || !has(d) {
		t.Fatalf("after the second gc: stored a %v b %v c %v d %v", has(a), has(b), has(c), has(d))
	}
	for _, f := range []*testFile{fa, fc, fd} {
		if got, err := readFile(ctx, s, f.hash, nil); err != nil || !bytes.Equal(got, f.content) {
			t.Fatalf("file %s after gc: %v", f.hash, err)
		}
	}
	if chk, err := NewMaint(s).Check(ctx); err != nil || len(chk.Problems) != 0 {
		t.Fatalf("check after gc: %v %v", err, chk)
	}
	if left, err := be.List(ctx, trashPrefix); err != nil || len(left) != 0 {
		t.Fatalf("trash after the second gc: %v %v", left, err)
	}
}

// A reader that finds a xorb missing restores it from the trash (a record written in the race
// with gc's move), and gc refuses a grace period a registration could outlast.
func TestGCReaderRestores(t *testing.T) {
	ctx := context.Background()
	var offset atomic.Int64
	s, err := Open("", Options{Backend: looseBackend(t, t.TempDir()), Now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMaint(s).Collect(ctx, GCOptions{Grace: time.Minute}); err == nil || !strings.Contains(err.Error(), "registration") {
		t.Fatalf("a 1 minute grace period was accepted: %v", err)
	}
	r := loadRef(t)
	x := r.xorb(0, 1)
	f := r.file(seg{x, 0, 2})
	mustPutXorb(t, s, x)
	sh, err := shard.Parse(r.shardBytes([]*testFile{f}, x))
	if err != nil {
		t.Fatal(err)
	}
	v := validator{s: s}
	plans, err := v.checkShard(ctx, sh)
	if err != nil {
		t.Fatal(err)
	}
	offset.Store(int64(25 * time.Hour))
	if rep, err := NewMaint(s).Collect(ctx, GCOptions{}); err != nil || rep.Trashed != 1 {
		t.Fatalf("gc: %v %v", rep, err)
	}
	if _, err := s.register(ctx, "", nil, plans); err != nil {
		t.Fatal(err)
	}
	if got, err := readFile(ctx, s, f.hash, nil); err != nil || !bytes.Equal(got, f.content) {
		t.Fatalf("reading a file whose xorb is in the trash: %v", err)
	}
	if ok, _ := s.HasXorb(ctx, x.hash); !ok {
		t.Fatal("the reader did not move the xorb back")
	}
}

// A pack another writer holds (a running server's) is left alone and reported busy; once that
// writer is idle, the pack is rewritten, and the other process stops finding the collected xorb
// within blobfs.PackStaleness.
func TestGCBusyPack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	server, err := blobfs.New(dir, blobfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	running, err := Open("", Options{Backend: server})
	if err != nil {
		t.Fatal(err)
	}
	r := loadRef(t)
	orphan := r.xorb(0, 1)
	mustPutXorb(t, running, orphan)
	gcBackend, err := blobfs.New(dir, blobfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := Open("", Options{Backend: gcBackend, Now: func() time.Time { return time.Now().Add(25 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := NewMaint(gc).Collect(ctx, GCOptions{}); err != nil || rep.Busy != 1 || rep.Trashed != 0 {
		t.Fatalf("gc with the pack held by a writer: %v %v", rep, err)
	}
	server.Close()
	if rep, err := NewMaint(gc).Collect(ctx, GCOptions{}); err != nil || rep.Busy != 0 || rep.Trashed != 1 {
		t.Fatalf("gc once the writer is idle: %v %v", rep, err)
	}
	if packs, _ := filepath.Glob(filepath.Join(dir, "packs", "*.pack")); len(packs) != 1 {
		t.Fatalf("packs after the rewrite: %v", packs)
	}
	time.Sleep(blobfs.PackStaleness + 100*time.Millisecond)
	if ok, err := running.HasXorb(ctx, orphan.hash); err != nil || ok {
		t.Fatalf("the other process still finds the collected xorb: %v %v", ok, err)
	}
	// It is in the trash; a read restores it, as a registration would.
	if f, _, err := running.OpenXorb(ctx, orphan.hash); err != nil {
		t.Fatalf("reading a trashed packed xorb: %v", err)
	} else {
		f.Close()
	}
}

// movesOnWrite is a backend on which "gc" moves a xorb to the trash just before the next batch
// write: between a registration's check of its xorbs and the write of its records.
type movesOnWrite struct {
	*blobfs.Backend
	name string
}

func (m *movesOnWrite) CreateBatch(ctx context.Context, blobs []blob.NewBlob) ([]bool, error) {
	if m.name != "" {
		if err := m.Move(ctx, m.name, trashPrefix+m.name); err != nil {
			return nil, err
		}
		m.name = ""
	}
	return m.Backend.CreateBatch(ctx, blobs)
}

// A xorb gc moves between a registration's check and its write is moved back by the
// registration itself, so no record names a xorb only the trash holds (a client fetching straight
// from a bucket could not restore it).
func TestRegistrationRechecksItsXorbs(t *testing.T) {
	ctx := context.Background()
	be := &movesOnWrite{Backend: looseBackend(t, t.TempDir())}
	s, err := Open("", Options{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	r := loadRef(t)
	x := r.xorb(0, 1)
	f := r.file(seg{x, 0, 2})
	mustPutXorb(t, s, x)
	be.name = xorbName(x.hash)
	if _, err := s.PutShard(ctx, "", r.shardBytes([]*testFile{f}, x)); err != nil {
		t.Fatal(err)
	}
	if ok, err := be.Exists(ctx, xorbName(x.hash)); err != nil || !ok {
		t.Fatalf("the xorb gc moved during the registration is not back: %v %v", ok, err)
	}
}

// cancelAfterMoves is an Observer that cancels a gc's context once it has seen n moves.
type cancelAfterMoves struct {
	nopObserver
	n      atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfterMoves) BackendOp(op string, _ time.Duration, _ error) {
	if op == "move" && c.n.Add(-1) == 0 {
		c.cancel()
	}
}

// A gc whose context ends (the server's SIGTERM) stops between two blobs and says so; the store
// checks clean, and the next run moves the rest, each xorb once.
func TestGCStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := &cancelAfterMoves{cancel: cancel}
	obs.n.Store(3)
	s, err := Open("", Options{Backend: looseBackend(t, t.TempDir()), Observe: obs,
		Now: func() time.Time { return time.Now().Add(25 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	const garbage = 12
	for i := range garbage {
		x := testutil.RandomXorb(4000, uint64(i))
		if _, err := s.PutXorbBytes(ctx, x.Hash, x.Body); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := NewMaint(s).Collect(ctx, GCOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("gc cancelled after 3 moves: %v, report %v", err, rep)
	}
	moved, _ := s.Backend().List(context.Background(), trashPrefix)
	if len(moved) != 3 {
		t.Fatalf("gc went on after its context ended: %d xorbs in the trash, want 3", len(moved))
	}
	if chk, err := NewMaint(s).Check(context.Background()); err != nil || len(chk.Problems) != 0 {
		t.Fatalf("check after a stopped gc: %v %v", err, chk)
	}
	rep, err = NewMaint(s).Collect(context.Background(), GCOptions{})
	if err != nil || rep.Trashed != garbage-3 || rep.Xorbs != garbage-3 {
		t.Fatalf("the next gc: %v %v; want the %d others moved", rep, err, garbage-3)
	}
}
