package store

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/s3test"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/s3"
)

// clock is a store's Now that moves a second at each call.
func clock() func() time.Time {
	t := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

// rawOf is the raw bytes of chunks [s, e) of x.
func (r *refData) rawOf(x *testXorb, s, e int) uint64 {
	var n uint64
	for c := s; c < e; c++ {
		n += uint64(len(r.raws[x.ref[c]]))
	}
	return n
}

// shardOrder is the files of a shard in the order registration takes them.
func shardOrder(t *testing.T, body []byte) []hash.Hash {
	t.Helper()
	sh, _, err := shard.ParseUpload(body)
	if err != nil {
		t.Fatal(err)
	}
	var out []hash.Hash
	for _, f := range sh.Files {
		out = append(out, f.Hash)
	}
	return out
}

// Each file a registration names gets one record, in registration order, with the bytes of it in
// the xorbs its shard brought (each chunk once per shard) as new bytes; a registration repeated
// adds records the reader does not show; the whole store records nothing; fsck finds the records
// sound; and the records cost no write call of their own.
func TestHistoryRecordsRegistrations(t *testing.T) {
	t.Run("fs", func(t *testing.T) { historyOf(t, nil) })
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t)
		b, err := s3.New(context.Background(), s3.Config{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}, srv.Bucket, "h/")
		if err != nil {
			t.Fatal(err)
		}
		historyOf(t, b)
	})
}

// historyOf is TestHistoryRecordsRegistrations on backend be (nil: the filesystem).
func historyOf(t *testing.T, be blob.Backend) {
	ctx := context.Background()
	obs := &recordingObserver{ops: map[string]int{}}
	s, err := Open(t.TempDir(), Options{Now: clock(), Observe: obs, Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	r := loadRef(t)
	x1, x2 := r.xorb(0, 1, 2, 3, 4), r.xorb(5, 6, 7, 8, 9)
	mustPutXorb(t, s, x1)
	mustPutXorb(t, s, x2)
	f1, f2 := r.file(seg{x1, 0, 3}), r.file(seg{x1, 2, 5}) // both name chunk 2 of x1
	first := r.shardBytes([]*testFile{f1, f2}, x1)
	batches, creates := obs.ops["create_batch"], obs.ops["create"]
	if _, err := s.PutShard(ctx, "org/a", first); err != nil {
		t.Fatal(err)
	}
	if obs.ops["create_batch"] != batches+1 || obs.ops["create"] != creates {
		t.Fatalf("a registration made %d batches and %d single writes, want 1 and 0", obs.ops["create_batch"]-batches, obs.ops["create"]-creates)
	}
	f3 := r.file(seg{x1, 0, 2}, seg{x2, 0, 2}) // x1's part stored before; x2's brought by its shard
	if _, err := s.PutShard(ctx, "org/a", r.shardBytes([]*testFile{f3}, x2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutShard(ctx, "org/a", first); err != nil { // again: a retry
		t.Fatal(err)
	}
	if _, err := s.PutShard(ctx, "", r.shardBytes([]*testFile{f3})); err != nil {
		t.Fatal(err)
	}

	o, err := s.RepoObjects(ctx, "org/a")
	if err != nil {
		t.Fatal(err)
	}
	order := shardOrder(t, first)
	byHash := map[hash.Hash]*testFile{f1.hash: f1, f2.hash: f2}
	firstFile, secondFile := byHash[order[0]], byHash[order[1]]
	shared := r.rawOf(x1, 2, 3)
	want := []struct {
		f   *testFile
		new uint64
	}{
		{firstFile, uint64(len(firstFile.content))},
		{secondFile, uint64(len(secondFile.content)) - shared},
		{f3, r.rawOf(x2, 0, 2)},
	}
	if len(o.History) != len(want) || len(o.Earlier) != 0 {
		t.Fatalf("history of org/a: %d records, %d earlier objects; want %d and 0", len(o.History), len(o.Earlier), len(want))
	}
	for i, w := range want {
		g := o.History[i]
		if g.File != w.f.hash || g.OID != hash.FromSHA256(w.f.sha) || g.Size != uint64(len(w.f.content)) || g.New != w.new {
			t.Errorf("record %d: %+v, want file %s oid %s size %d new %d", i, g, w.f.hash, hash.FromSHA256(w.f.sha), len(w.f.content), w.new)
		}
		if i > 0 && !g.Time.After(o.History[i-1].Time) {
			t.Errorf("record %d at %v, not after record %d at %v", i, g.Time, i-1, o.History[i-1].Time)
		}
	}
	if got, wantShare := o.History[2].Deduplicated(), float64(r.rawOf(x1, 0, 2))/float64(len(f3.content)); got < wantShare-1e-9 || got > wantShare+1e-9 {
		t.Errorf("f3 deduplicated %.4f, want %.4f", got, wantShare)
	}
	if whole, err := s.RepoObjects(ctx, ""); err != nil || len(whole.History) != 0 {
		t.Fatalf("the whole store's history: %+v %v, want none", whole, err)
	}
	if rep, err := NewMaint(s).Check(ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("fsck of a store with history records: %v\n%s", err, rep)
	}
}

// The bridge's and the embedded store's sessions register through PutShardTrusted: recorded too.
func TestHistoryOfTrustedRegistrations(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	r := loadRef(t)
	x := r.xorb(0, 1, 2)
	mustPutXorb(t, s, x)
	f := r.file(seg{x, 0, 3})
	if _, err := s.PutShardTrusted(ctx, "org/bridge", r.shardBytes([]*testFile{f}, x)); err != nil {
		t.Fatal(err)
	}
	o, err := s.RepoObjects(ctx, "org/bridge")
	if err != nil || len(o.History) != 1 || o.History[0].New != uint64(len(f.content)) || o.History[0].Deduplicated() != 0 {
		t.Fatalf("history after a trusted registration: %+v %v", o, err)
	}
}

// A repository whose files were registered before records were kept lists their oids apart
// (sorted), and Repositories lists every named namespace with its entry count, not the whole
// store's.
func TestHistoryOfUpgradedRepository(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	r := loadRef(t)
	x := r.xorb(0, 1, 2, 3)
	mustPutXorb(t, s, x)
	a, b := r.file(seg{x, 0, 2}), r.file(seg{x, 2, 4})
	if _, err := s.PutShard(ctx, "", r.shardBytes([]*testFile{a, b}, x)); err != nil {
		t.Fatal(err)
	}
	// What a store of format 1 or 2 holds for org/old: the mappings, no records.
	var old []blob.NewBlob
	for _, f := range []*testFile{b, a} {
		old = append(old, blob.NewBlob{Name: sha256VerifiedName("org/old", hash.FromSHA256(f.sha)), Data: marshalSHA(f.hash, uint64(len(f.content)))})
	}
	if _, err := s.be.CreateBatch(ctx, old); err != nil {
		t.Fatal(err)
	}
	o, err := s.RepoObjects(ctx, "org/old")
	if err != nil || len(o.History) != 0 || len(o.Earlier) != 2 || o.Entries != 2 {
		t.Fatalf("org/old: %+v %v, want 2 earlier objects, 2 entries", o, err)
	}
	if o.Earlier[0].String() > o.Earlier[1].String() {
		t.Fatalf("earlier objects out of order: %v", o.Earlier)
	}
	repos, err := s.Repositories(ctx)
	if err != nil || len(repos) != 1 || repos[0].Name != "org/old" || repos[0].Entries != 2 {
		t.Fatalf("Repositories: %+v %v, want org/old alone (the whole store's namespace is not one)", repos, err)
	}
}

// fsck reports a history record whose blob does not say what its name says, and one whose name
// does not parse; the reader skips the latter.
func TestFsckChecksHistoryRecords(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	r := loadRef(t)
	x := r.xorb(0, 1)
	mustPutXorb(t, s, x)
	f := r.file(seg{x, 0, 2})
	if _, err := s.PutShard(ctx, "org/a", r.shardBytes([]*testFile{f}, x)); err != nil {
		t.Fatal(err)
	}
	o, err := s.RepoObjects(ctx, "org/a")
	if err != nil || len(o.History) != 1 {
		t.Fatalf("%+v %v", o, err)
	}
	lie := o.History[0]
	lie.Time = lie.Time.Add(time.Hour)
	truth := o.History[0]
	truth.New = 1
	bad := "ns/" + nsDir("org/a") + "/reg/not-a-record"
	for _, b := range []blob.NewBlob{{Name: historyName("org/a", lie), Data: marshalHistory(truth)}, {Name: bad, Data: []byte("x")}} {
		if _, err := s.be.Create(ctx, b.Name, bytes.NewReader(b.Data)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := NewMaint(s).Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text := rep.String()
	if len(rep.Problems) != 2 || !strings.Contains(text, "does not say what its name says") || !strings.Contains(text, "not-a-record") {
		t.Fatalf("fsck:\n%s", text)
	}
	if o, err := s.RepoObjects(ctx, "org/a"); err != nil || len(o.History) != 1 {
		t.Fatalf("history beside a foreign entry: %+v %v", o, err)
	}
}
