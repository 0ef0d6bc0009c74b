package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// listingUsers: alice and bob write everywhere.
func listingEnv(t *testing.T) *env {
	return newEnv(t, func(c *Config) {
		c.Users = mustUsers(t, servertest.UserLine("alice", "alice-password-1", "")+servertest.UserLine("bob", "bob-password-2", ""))
	})
}

// listingOf asks the batch route of repo as user for objs and returns the listing URL its xet
// actions name and the CAS token of the answer.
func listingOf(t *testing.T, e *env, user, repo, op string, objs ...lfsbatch.Object) (url, tok string) {
	t.Helper()
	res, br := e.batch(repo, batchBody(op, []string{"xet"}, objs...), servertest.Basic(user, user+"-password-"+map[string]string{"alice": "1", "bob": "2"}[user])...)
	if res.status != 200 || len(br.Objects) == 0 {
		t.Fatalf("batch: %v", res)
	}
	for _, o := range br.Objects {
		if a := o.Actions[op]; a != nil {
			url = a.Header[lfsbatch.HeaderBatchURL]
			tok = a.Header[lfsbatch.HeaderAccessToken]
		}
	}
	if !strings.HasPrefix(url, e.base+"/v1/batches/") {
		t.Fatalf("the batch answer names no listing: %q", url)
	}
	return url, tok
}

// The listing of an upload batch lists its objects for the answer's own token; another user,
// another repository, a read token, an unknown id and an expired listing all get the same 404.
func TestBatchListingUpload(t *testing.T) {
	e := listingEnv(t)
	var objs []lfsbatch.Object
	for i := range 3 {
		b := []byte(fmt.Sprintf("file %d", i))
		objs = append(objs, lfsbatch.Object{OID: sha256Hex(b), Size: int64(len(b))})
	}
	url, tok := listingOf(t, e, "alice", "org/repo", "upload", objs...)
	res := e.do("GET", url, nil, servertest.Bearer(tok)...)
	if res.status != 200 {
		t.Fatalf("listing with the batch's own token: %v", res)
	}
	got := decodeJSON[casapi.BatchListing](t, res.body)
	if got.Operation != "upload" || len(got.Objects) != 3 || got.Objects[1].OID != objs[1].OID || got.Objects[1].Size != objs[1].Size {
		t.Fatalf("listing %+v", got)
	}
	unknown := e.do("GET", e.base+"/v1/batches/"+strings.Repeat("0", 32), nil, servertest.Bearer(tok)...)
	if unknown.status != 404 {
		t.Fatalf("unknown id: %v", unknown)
	}
	for name, tok := range map[string]string{
		"another user":       e.token("bob", "org/repo", ScopeWrite, time.Minute),
		"another repository": e.token("alice", "org/other", ScopeWrite, time.Minute),
		"a read token":       e.token("alice", "org/repo", ScopeRead, time.Minute),
	} {
		res := e.do("GET", url, nil, servertest.Bearer(tok)...)
		if res.status != 404 || !bytes.Equal(res.body, unknown.body) {
			t.Errorf("%s: %v, want the answer to an unknown id (%v)", name, res, unknown)
		}
	}
	// A token of the right user and scope, but past the listing's life (the answer's token's).
	e.clock.Advance(e.srv.cfg.TokenTTL + time.Second)
	if res := e.do("GET", url, nil, servertest.Bearer(e.token("alice", "org/repo", ScopeWrite, time.Minute))...); res.status != 404 {
		t.Errorf("expired listing: %v", res)
	}
}

// A download listing carries each object's Xet file hash and is read with a read token; objects
// without an action (unknown) are not listed.
func TestBatchListingDownload(t *testing.T) {
	e := listingEnv(t)
	r := loadRef(t)
	e.uploadRef(r, servertest.Bearer(e.token("alice", "org/repo", ScopeWrite, time.Minute))...)
	obj := lfsbatch.Object{OID: sha256Hex(r.content), Size: int64(len(r.content))}
	missing := lfsbatch.Object{OID: strings.Repeat("ab", 32), Size: 5}
	url, tok := listingOf(t, e, "bob", "org/repo", "download", obj, missing)
	res := e.do("GET", url, nil, servertest.Bearer(tok)...)
	if res.status != 200 {
		t.Fatalf("listing: %v", res)
	}
	got := decodeJSON[casapi.BatchListing](t, res.body)
	want := casapi.BatchObject{OID: obj.OID, Size: obj.Size, XetHash: r.fileHash.String()}
	if got.Operation != "download" || len(got.Objects) != 1 || got.Objects[0] != want {
		t.Fatalf("listing %+v, want only %+v", got, want)
	}
	if res := e.do("GET", url, nil, servertest.Bearer(e.token("alice", "org/repo", ScopeRead, time.Minute))...); res.status != 404 {
		t.Errorf("alice read bob's listing: %v", res)
	}
	if res := e.do("GET", url, nil); res.status != 401 {
		t.Errorf("no token: %v", res)
	}
}

// The listings held are bounded in count and objects, the oldest dropped first, and a listing
// larger than the bound is not held.
func TestBatchListingsBounded(t *testing.T) {
	var b batchListings
	now := time.Unix(1000, 0)
	c := Claims{Namespace: "ns", Scope: ScopeRead}
	one := func() *batchListing {
		return &batchListing{ns: "ns", exp: now.Add(time.Hour), body: casapi.BatchListing{Objects: make([]casapi.BatchObject, 1)}}
	}
	for i := range maxListings + 1 {
		b.add(fmt.Sprint(i), one(), now)
	}
	if _, ok := b.get("0", c, now); ok || len(b.byID) != maxListings {
		t.Fatalf("%d listings held (the first kept: %v), want %d", len(b.byID), ok, maxListings)
	}
	if _, ok := b.get(fmt.Sprint(maxListings), c, now); !ok {
		t.Fatal("the newest listing was dropped")
	}
	big := &batchListing{ns: "ns", exp: now.Add(time.Hour), body: casapi.BatchListing{Objects: make([]casapi.BatchObject, maxListedObjects-10)}}
	b.add("big", big, now)
	if b.objects > maxListedObjects {
		t.Fatalf("%d objects held, bound %d", b.objects, maxListedObjects)
	}
	b.add("huge", &batchListing{ns: "ns", exp: now.Add(time.Hour), body: casapi.BatchListing{Objects: make([]casapi.BatchObject, maxListedObjects+1)}}, now)
	if _, ok := b.get("huge", c, now); ok {
		t.Fatal("a listing over the bound alone was held")
	}
	// Expired listings go first, whatever the bounds.
	b.add("late", one(), now.Add(2*time.Hour))
	if len(b.byID) != 1 {
		t.Fatalf("%d listings held after every other expired, want 1", len(b.byID))
	}
}

// listedFiles registers n small files of size bytes in org/repo, perXorb to a xorb, and returns
// them as batch objects.
func listedFiles(t *testing.T, e *env, n, size, perXorb int) []lfsbatch.Object {
	t.Helper()
	a := store.Access{Repo: "org/repo", User: "alice"}
	var objs []lfsbatch.Object
	for _, b := range testutil.SmallFiles(n, size, perXorb, 7) {
		if _, err := e.st.PutXorbAs(context.Background(), a, b.Xorb, bytes.NewReader(b.Body), xorb.Follows{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.PutShardAs(context.Background(), a, b.Shard); err != nil {
			t.Fatal(err)
		}
		for _, s := range b.SHA256 {
			objs = append(objs, lfsbatch.Object{OID: hex.EncodeToString(s[:]), Size: int64(size)})
		}
	}
	return objs
}

// A listing's answer plans at most listedPlanFiles files; the rest are listed without a plan.
func TestBatchListingPlansBounded(t *testing.T) {
	e := listingEnv(t)
	objs := listedFiles(t, e, listedPlanFiles+20, 100, 64)
	url, tok := listingOf(t, e, "bob", "org/repo", "download", objs...)
	got := decodeJSON[casapi.BatchListing](t, e.do("GET", url, nil, servertest.Bearer(tok)...).body)
	if len(got.Objects) != len(objs) || len(got.Plans) != listedPlanFiles {
		t.Fatalf("%d objects listed, %d planned; want %d and %d", len(got.Objects), len(got.Plans), len(objs), listedPlanFiles)
	}
}

// A download listing carries the plans of its small files, each as GET /v2/reconstructions plans
// it, and per xorb their ranges merged: the files registered together in one xorb are one range,
// one request, and the merged fetches alone reconstruct every file.
func TestBatchListingDownloadPlans(t *testing.T) {
	e := listingEnv(t)
	const n, size = 20, 3000
	objs := listedFiles(t, e, n, size, n)
	url, tok := listingOf(t, e, "bob", "org/repo", "download", objs...)
	res := e.do("GET", url, nil, servertest.Bearer(tok)...)
	if res.status != 200 {
		t.Fatalf("listing: %v", res)
	}
	got := decodeJSON[casapi.BatchListing](t, res.body)
	if len(got.Plans) != n || len(got.Fetches) != 1 {
		t.Fatalf("%d plans and fetches of %d xorbs, want %d and 1", len(got.Plans), len(got.Fetches), n)
	}
	for h, fs := range got.Fetches {
		if len(fs) != 1 || len(fs[0].Ranges) != 1 {
			t.Errorf("xorb %s: %d fetches, the first of %d ranges; want one range", h, len(fs), len(fs[0].Ranges))
		}
	}
	for _, o := range got.Objects {
		p := got.Plans[o.XetHash]
		one := e.do("GET", "/v2/reconstructions/"+o.XetHash, nil, servertest.Bearer(tok)...)
		if p == nil || one.status != 200 || !reflect.DeepEqual(p.Terms, decodeJSON[casapi.ReconstructionV2](t, one.body).Terms) {
			t.Fatalf("%s: listed plan %+v, per-file route %v", o.OID, p, one)
		}
		merged := *p
		merged.Xorbs = got.Fetches
		for name, plan := range map[string]*casapi.ReconstructionV2{"its own URLs": p, "the merged fetches": &merged} {
			if b := e.fetchPlan(plan, size); sha256Hex(b) != o.OID {
				t.Fatalf("%s through %s: %d bytes, not the object", o.OID, name, len(b))
			}
		}
	}
}

// Merged ranges are the union of the ranges, never more: touching ones join, others stay apart.
func TestMergeRanges(t *testing.T) {
	r := func(c0, c1 uint32, b0, b1 uint64) casapi.XorbRange {
		return casapi.XorbRange{Chunks: casapi.ChunkRange{Start: c0, End: c1}, Bytes: casapi.ByteRange{Start: b0, End: b1}}
	}
	got := mergeRanges([]casapi.XorbRange{r(2, 3, 200, 299), r(0, 1, 0, 99), r(1, 2, 100, 199), r(5, 6, 500, 599), r(5, 6, 500, 599)})
	want := []casapi.XorbRange{r(0, 3, 0, 299), r(5, 6, 500, 599)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged %+v, want %+v", got, want)
	}
}
