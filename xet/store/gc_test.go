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

	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// conformGC runs garbage collection on a backend through its life: young orphans kept, old ones
// trashed then deleted, a dry run changing nothing, a registration restoring a trashed xorb, a
// record written in the race with the move (the xorb is restored by the next run), referenced
// xorbs never touched. On FSBackend, the packs holding small xorbs are rewritten.
func conformGC(t *testing.T, be Backend) {
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
	v := validator{s: s, ctx: ctx}
	racing, err := v.checkShard(sh)
	if err != nil {
		t.Fatal(err)
	}
	collect := func(ahead time.Duration, dry bool) *GCReport {
		t.Helper()
		offset.Store(int64(ahead))
		if fb, ok := be.(*FSBackend); ok {
			fb.releaseIdle() // as after writerIdle: the pack this test wrote is free to rewrite
		}
		rep, err := s.Collect(ctx, GCOptions{DryRun: dry})
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
	if chk, err := s.Check(ctx); err != nil || len(chk.Problems) != 0 {
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
	if _, err := s.Collect(ctx, GCOptions{Grace: time.Minute}); err == nil || !strings.Contains(err.Error(), "registration") {
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
	v := validator{s: s, ctx: ctx}
	plans, err := v.checkShard(sh)
	if err != nil {
		t.Fatal(err)
	}
	offset.Store(int64(25 * time.Hour))
	if rep, err := s.Collect(ctx, GCOptions{}); err != nil || rep.Trashed != 1 {
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

// conformSweep: what gc asks of a backend (Sweeper): listing with sizes and times, moving, deleting.
func conformSweep(t *testing.T, be Backend) {
	ctx := context.Background()
	sw, ok := be.(Sweeper)
	if !ok {
		t.Fatalf("%T is not a Sweeper", be)
	}
	big := bytes.Repeat([]byte("x"), 2<<20) // a file of its own on FSBackend, not packed
	small := []byte("small")
	before := time.Now().Add(-time.Minute)
	for name, data := range map[string][]byte{"xorbs/aa/big": big, "xorbs/bb/small": small} {
		if _, err := be.Create(ctx, name, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := sw.ListInfo(ctx, "xorbs/")
	if err != nil || len(infos) != 2 {
		t.Fatalf("ListInfo: %v %v", infos, err)
	}
	packed := false
	for _, in := range infos {
		want := map[string]int64{"xorbs/aa/big": int64(len(big)), "xorbs/bb/small": int64(len(small))}[in.Name]
		if in.Size != want || in.ModTime.Before(before) || in.ModTime.After(time.Now().Add(time.Minute)) {
			t.Errorf("ListInfo entry %+v: want size %d and a time of now", in, want)
		}
		packed = packed || in.Packed
	}
	if err := sw.Move(ctx, "xorbs/aa/big", "trash/xorbs/aa/big"); err != nil {
		t.Fatal(err)
	}
	if names, _ := be.List(ctx, "xorbs/"); len(names) != 1 {
		t.Fatalf("after the move, xorbs/ lists %v", names)
	}
	if ok, _ := be.Exists(ctx, "trash/xorbs/aa/big"); !ok {
		t.Fatal("the moved blob is not at its new name")
	}
	if err := sw.Move(ctx, "xorbs/aa/big", "trash/xorbs/aa/big"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("moving a missing blob: %v, want ErrNotFound", err)
	}
	if err := sw.Delete(ctx, "trash/xorbs/aa/big"); err != nil {
		t.Fatal(err)
	}
	if err := sw.Delete(ctx, "trash/xorbs/aa/big"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting a missing blob: %v, want ErrNotFound", err)
	}
	err = sw.Delete(ctx, "xorbs/bb/small")
	switch {
	case packed && !errors.Is(err, ErrPacked):
		t.Fatalf("deleting a packed blob: %v, want ErrPacked", err)
	case !packed && err != nil:
		t.Fatal(err)
	}
}

// A pack another writer holds (a running server's) is left alone and reported busy; once that
// writer is idle, the pack is rewritten, and the other process stops finding the collected xorb
// within packStaleness.
func TestGCBusyPack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	server, err := NewFSBackend(dir)
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
	gcBackend, err := NewFSBackend(dir)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := Open("", Options{Backend: gcBackend, Now: func() time.Time { return time.Now().Add(25 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := gc.Collect(ctx, GCOptions{}); err != nil || rep.Busy != 1 || rep.Trashed != 0 {
		t.Fatalf("gc with the pack held by a writer: %v %v", rep, err)
	}
	server.releaseIdle()
	if rep, err := gc.Collect(ctx, GCOptions{}); err != nil || rep.Busy != 0 || rep.Trashed != 1 {
		t.Fatalf("gc once the writer is idle: %v %v", rep, err)
	}
	if packs, _ := filepath.Glob(filepath.Join(dir, "packs", "*.pack")); len(packs) != 1 {
		t.Fatalf("packs after the rewrite: %v", packs)
	}
	time.Sleep(packStaleness + 100*time.Millisecond)
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
	*FSBackend
	name string
}

func (m *movesOnWrite) CreateBatch(ctx context.Context, blobs []NewBlob) ([]bool, error) {
	if m.name != "" {
		if err := m.Move(ctx, m.name, trashPrefix+m.name); err != nil {
			return nil, err
		}
		m.name = ""
	}
	return m.FSBackend.CreateBatch(ctx, blobs)
}

// A xorb gc moves between a registration's check and its write is moved back by the
// registration itself, so no record names a xorb only the trash holds (a client fetching straight
// from a bucket could not restore it).
func TestRegistrationRechecksItsXorbs(t *testing.T) {
	ctx := context.Background()
	be := &movesOnWrite{FSBackend: looseBackend(t, t.TempDir()).(*FSBackend)}
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
