package store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// oneXorbFile is a file of two chunks (5000 bytes) in a xorb of its own.
func oneXorbFile(seed uint64) *testutil.OneXorbFile {
	return testutil.NewOneXorbFile([][]byte{testutil.RandomBytes(3000, seed), testutil.RandomBytes(2000, seed+1)})
}

// termsOnly is f's shard without its xorb section: what a client sends whose xorbs were stored by
// someone else.
func termsOnly(t *testing.T, f *testutil.OneXorbFile) []byte {
	t.Helper()
	sh, _, err := shard.ParseUpload(f.Shard)
	if err != nil {
		t.Fatal(err)
	}
	sh.Xorbs = nil
	return sh.AppendUpload(nil)
}

// usage is ns's RepoUsage, checked against RepoUsageOf its RepoObjects (the web view's read).
func usage(t *testing.T, s *Store, ns string) Usage {
	t.Helper()
	u, err := s.RepoUsage(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.RepoObjects(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	if of, err := s.RepoUsageOf(context.Background(), o); err != nil || of != u {
		t.Fatalf("RepoUsageOf %s = %+v, %v; RepoUsage = %+v", ns, of, err, u)
	}
	return u
}

// A xorb a repository uploaded counts whole from its upload on, registered or not, and once: the
// file registered over it adds nothing more. Another repository that registers a file over it
// without uploading it counts the chunk ranges its file names. A record of a xorb the store never
// got counts nothing.
func TestUsageCountsUploadedXorbs(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	f := oneXorbFile(1)
	a := Access{Repo: "org/a"}
	if up, err := s.PutXorbAs(ctx, a, f.Xorb, bytes.NewReader(f.Body), xorb.Follows{}); err != nil || !up.Recorded || up.RawBytes != 5000 {
		t.Fatalf("PutXorbAs: %+v %v, want recorded, 5000 raw bytes", up, err)
	}
	if up, err := s.PutXorbAs(ctx, a, f.Xorb, bytes.NewReader(f.Body), xorb.Follows{}); err != nil || up.Recorded || up.Inserted {
		t.Fatalf("PutXorbAs again: %+v %v, want neither stored nor recorded again", up, err)
	}
	if u := usage(t, s, "org/a"); u.Stored != 5000 || u.Files != 0 {
		t.Fatalf("org/a with an unregistered upload: %+v, want 5000 stored", u)
	}
	if adds, largest, err := s.ShardAdds(ctx, a, f.Shard); err != nil || adds != 0 || largest != 0 {
		t.Fatalf("ShardAdds of org/a's own xorb: %d (largest file %d) %v, want 0", adds, largest, err)
	}
	if _, err := s.PutShard(ctx, "org/a", f.Shard); err != nil {
		t.Fatal(err)
	}
	if u := usage(t, s, "org/a"); u.Stored != 5000 || u.Files != 1 {
		t.Fatalf("org/a once registered: %+v, want 5000 stored, counted once", u)
	}
	b := Access{Repo: "org/b"}
	var inv *InvalidError
	if _, _, err := s.ShardAdds(ctx, b, termsOnly(t, f)); !errors.As(err, &inv) || !strings.Contains(err.Error(), "not uploaded to this repository") {
		t.Fatalf("ShardAdds of org/b over org/a's xorb before a keyed answer showed it: %v, want registration's refusal", err)
	}
	if _, err := s.GlobalDedupeAs(ctx, b, hash.Chunk(testutil.RandomBytes(3000, 1))); err != nil {
		t.Fatal(err)
	}
	if adds, largest, err := s.ShardAdds(ctx, b, termsOnly(t, f)); err != nil || adds != 5000 || largest != 5000 {
		t.Fatalf("ShardAdds of org/b over org/a's xorb: %d (largest file %d) %v, want 5000", adds, largest, err)
	}
	if _, err := s.PutShard(ctx, "org/b", termsOnly(t, f)); err != nil {
		t.Fatal(err)
	}
	if u := usage(t, s, "org/b"); u.Stored != 5000 {
		t.Fatalf("org/b over org/a's xorb: %+v, want its 5000 bytes of ranges", u)
	}
	if _, err := s.recordUpload(ctx, Access{Repo: "org/c"}, oneXorbFile(9).Xorb, 1<<30); err != nil {
		t.Fatal(err)
	}
	if u := usage(t, s, "org/c"); u.Stored != 0 {
		t.Fatalf("a record of a xorb never stored: %+v, want nothing", u)
	}
	if r, err := NewMaint(s).Check(ctx); err != nil || len(r.Problems) != 0 {
		t.Fatalf("fsck with upload records: %v %v", r, err)
	}
}

// An uploaded xorb no file names counts while the store keeps it, in its trash too, and no longer
// once gc has deleted it; uploaded again, it counts again.
func TestUsageOfUnregisteredXorbFollowsGC(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	s, err := Open(t.TempDir(), Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// Over a pack's largest blob: a file of its own, which gc moves while this store is open.
	var chunks [][]byte
	for i := range 14 {
		chunks = append(chunks, testutil.RandomBytes(100<<10, uint64(30+i)))
	}
	f := testutil.NewOneXorbFile(chunks)
	if _, err := s.PutXorbAs(ctx, Access{Repo: "org/a"}, f.Xorb, bytes.NewReader(f.Body), xorb.Follows{}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint64{1400 << 10, 0} { // the first run moves it to trash, the second deletes it
		now = now.Add(2 * time.Hour)
		r, err := NewMaint(s).Collect(ctx, GCOptions{Grace: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if u := usage(t, s, "org/a"); u.Stored != want || r.Trashed+r.Deleted != 1 {
			t.Fatalf("after gc run %d (%s): %+v, want %d stored", i+1, r, u, want)
		}
	}
	// Uploaded again, it counts again: the quota is asked for it, and told it counts.
	var asked uint64
	admit := func(raw uint64) error { asked += raw; return nil }
	up, err := s.PutXorbAdmitted(ctx, Access{Repo: "org/a"}, f.Xorb, bytes.NewReader(f.Body), xorb.Follows{}, admit)
	if err != nil || !up.Counted || up.Recorded || asked != 1400<<10 {
		t.Fatalf("the deleted xorb uploaded again: %+v %v, asked for %d; want counted (not recorded again), asked for its raw bytes", up, err, asked)
	}
	if u := usage(t, s, "org/a"); u.Stored != 1400<<10 {
		t.Fatalf("after the upload again: %+v", u)
	}
	asked = 0
	if up, err := s.PutXorbAdmitted(ctx, Access{Repo: "org/a"}, f.Xorb, bytes.NewReader(f.Body), xorb.Follows{}, admit); err != nil || up.Counted || asked != 0 {
		t.Fatalf("the kept xorb uploaded once more: %+v %v, asked for %d; want neither counted nor asked", up, err, asked)
	}
}

// An owner's repositories are those the Hub gives it: OWNER/NAME, datasets/OWNER/NAME and
// spaces/OWNER/NAME, counted together, each xorb once.
func TestOwnerCountsTypedRepositories(t *testing.T) {
	for ns, want := range map[string]string{"alice/m": "alice", "datasets/alice/d": "alice", "spaces/alice/s": "alice",
		"alice/group/x": "alice", "datasets/x": "datasets", "single": "", "": ""} {
		if got := Owner(ns); got != want {
			t.Errorf("Owner(%q) = %q, want %q", ns, got, want)
		}
	}
	ctx := context.Background()
	s := openStore(t)
	for i, ns := range []string{"alice/m", "datasets/alice/d", "spaces/alice/s", "datasets/bob/d"} {
		f := oneXorbFile(uint64(10 + 2*i))
		if _, err := s.PutXorbAs(ctx, Access{Repo: ns}, f.Xorb, bytes.NewReader(f.Body), xorb.Follows{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutShard(ctx, ns, f.Shard); err != nil {
			t.Fatal(err)
		}
		if ns == "alice/m" { // registered in a second repository of hers: counted once
			if _, err := s.PutShard(ctx, "datasets/alice/copy", termsOnly(t, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if b, err := s.OwnerStoredBytes(ctx, "alice"); err != nil || b != 15000 {
		t.Fatalf("alice's repositories: %d %v, want 15000", b, err)
	}
	if b, err := s.OwnerStoredBytes(ctx, "bob"); err != nil || b != 5000 {
		t.Fatalf("bob's: %d %v, want 5000", b, err)
	}
}

// One record says that a repository uploaded a xorb: the store writes it when it accepts the body,
// and both the access rule (UploadedBy) and the usage read it. A repository that uploads a xorb
// another one stored first holds it whole too (it sent every byte).
func TestUploadIsOneRecord(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	f := oneXorbFile(40)
	a := Access{Repo: "org/a", User: "alice"}
	if _, err := s.PutXorbAs(ctx, a, f.Xorb, bytes.NewReader(f.Body), xorb.Follows{}); err != nil {
		t.Fatal(err)
	}
	names, err := s.be.List(ctx, "ns/"+nsDir("org/a")+"/")
	if err != nil || len(names) != 1 {
		t.Fatalf("org/a's entries after one upload: %q %v, want one record", names, err)
	}
	if ok, err := s.UploadedBy(ctx, "org/a", f.Xorb); !ok || err != nil {
		t.Fatalf("UploadedBy: %v %v", ok, err)
	}
	if u := usage(t, s, "org/a"); u.Stored != 5000 {
		t.Fatalf("org/a's usage after its upload: %+v, want the xorb's 5000 bytes", u)
	}
	if _, err := s.PutXorbAs(ctx, Access{Repo: "org/b"}, f.Xorb, bytes.NewReader(f.Body), xorb.Follows{}); err != nil {
		t.Fatal(err)
	}
	if u := usage(t, s, "org/b"); u.Stored != 5000 {
		t.Fatalf("org/b's usage after uploading a stored xorb: %+v, want 5000", u)
	}
}

// ShardAdds refuses what registration refuses, and in its order: a shard over the caps before any
// of its xorbs is looked up (quotas count a shard before it registers; before, they looked up every
// xorb of any shard first).
func TestShardAddsRefusesOverTheCapsFirst(t *testing.T) {
	s := openStore(t)
	x := hash.Hash{0xfe}
	f := shard.File{Hash: hash.Hash{7}, HasSHA256: true, Verification: make([]hash.Hash, 1),
		Terms: []shard.Term{{Xorb: x, UnpackedBytes: 1, ChunkStart: 0, ChunkEnd: MaxFileChunks + 1}}}
	body := (&shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}}).AppendUpload(nil)
	var inv *InvalidError
	if _, _, err := s.ShardAdds(context.Background(), Access{Repo: "org/a"}, body); !errors.As(err, &inv) || !strings.Contains(err.Error(), "chunk references, at most") {
		t.Fatalf("a file of %d chunk references in a xorb nobody uploaded: %v, want the cap's refusal", MaxFileChunks+1, err)
	}
}

// The whole store's namespace (""), which keeps no membership entries, counts the files its
// mappings name; a repository counts its members (the server's test of colliding oids,
// TestQuotaCountsFilesWhoseOidCollides, shows a member no mapping names).
func TestUsageOfWholeStoreCountsMappedFiles(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	f := oneXorbFile(31)
	if _, err := s.PutXorbAs(ctx, Access{}, f.Xorb, bytes.NewReader(f.Body), xorb.Follows{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutShard(ctx, "", f.Shard); err != nil {
		t.Fatal(err)
	}
	if u := usage(t, s, ""); u.Files != 1 || u.Logical != 5000 || u.Stored != 5000 {
		t.Fatalf("the whole store with one file of 5000 bytes: %+v", u)
	}
}
