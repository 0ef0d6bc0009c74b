package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// A batch listing is asked for only at the action's own CAS, with the action's token, and taken
// only when it lists the process's operation and LFS objects; each listed object gets the
// action, with its own Xet hash.
func TestBatchListingChecked(t *testing.T) {
	oid := strings.Repeat("ab", 32)
	var answer atomic.Value
	var asked atomic.Int32
	cas := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.URL.Path != "/v1/batches/b1" || r.Header.Get("Authorization") != "Bearer tok" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(answer.Load())
	}))
	defer cas.Close()
	dir := t.TempDir()
	x := Open(Options{Log: zerolog.Nop(), Git: Git{Dir: dir}, Cache: CacheOptions{Root: filepath.Join(dir, "cache")}},
		agent.Init{Operation: "download", Remote: "origin", ConcurrentTransfers: 8}, nil)
	defer x.Close()
	action := func(listing string) agent.Object {
		a := (&lfsbatch.XetAction{CasURL: cas.URL, Token: "tok", XetHash: strings.Repeat("cd", 32), BatchURL: listing}).Action(0)
		return agent.Object{Oid: oid, Size: 5, Action: a}
	}
	answer.Store(casapi.BatchListing{Operation: "download", Objects: []casapi.BatchObject{{OID: oid, Size: 5, XetHash: strings.Repeat("ef", 32)}}})
	objs, err := x.BatchListing(context.Background(), action(cas.URL+"/v1/batches/b1"))
	if err != nil || len(objs) != 1 || objs[0].Oid != oid || lfsbatch.Header(objs[0].Action.Header, lfsbatch.HeaderXetHash) != strings.Repeat("ef", 32) {
		t.Fatalf("listing %+v, %v", objs, err)
	}
	before := asked.Load()
	for _, listing := range []string{"http://elsewhere.example/v1/batches/b1", cas.URL + "/v1/batches/", cas.URL + "/v1/batches/b1/../x", ""} {
		if _, err := x.BatchListing(context.Background(), action(listing)); err == nil {
			t.Errorf("listing %q taken", listing)
		}
	}
	if n := asked.Load() - before; n != 0 {
		t.Errorf("%d requests for listings not at the action's CAS", n)
	}
	for name, l := range map[string]casapi.BatchListing{
		"an upload listing": {Operation: "upload", Objects: []casapi.BatchObject{{OID: oid, Size: 5}}},
		"a bad oid":         {Operation: "download", Objects: []casapi.BatchObject{{OID: "../../x", Size: 5}}},
		"a negative size":   {Operation: "download", Objects: []casapi.BatchObject{{OID: oid, Size: -1}}},
		"too many objects":  {Operation: "download", Objects: make([]casapi.BatchObject, maxListedObjects+1)},
	} {
		answer.Store(l)
		if _, err := x.BatchListing(context.Background(), action(cas.URL+"/v1/batches/b1")); err == nil {
			t.Errorf("%s taken", name)
		}
	}
}

// A listed download is served only from the merged ranges fetched: a range inside one is its
// bytes, any other (partly outside, another xorb) an error, so the file goes its own way.
func TestListedCASServesOnlyWhatWasFetched(t *testing.T) {
	x1, x2 := hash.Hash{1}, hash.Hash{2}
	m := &listedCAS{ranges: map[hash.Hash][]fetchedRange{x1: {{r: casapi.ByteRange{Start: 100, End: 109}, data: []byte("0123456789")}}}}
	body, err := m.Fetch(context.Background(), x1, casapi.XorbFetch{}, casapi.ByteRange{Start: 102, End: 104})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(body); string(b) != "234" {
		t.Fatalf("bytes 102-104: %q", b)
	}
	for _, c := range []struct {
		x hash.Hash
		r casapi.ByteRange
	}{{x1, casapi.ByteRange{Start: 99, End: 101}}, {x1, casapi.ByteRange{Start: 108, End: 110}}, {x2, casapi.ByteRange{Start: 100, End: 101}}} {
		if _, err := m.Fetch(context.Background(), c.x, casapi.XorbFetch{}, c.r); err == nil {
			t.Errorf("%v of %v served", c.r, c.x)
		}
	}
}
