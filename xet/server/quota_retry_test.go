package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// Retries at the quota: a repository whose registration took it exactly to its quota (or, once the
// quota is lowered or the usage counted twice for a while, over it) sends again what it has. Alice
// keeps three xorbs of 1,000,000 raw bytes in org/big; org/x registers files naming them, each file
// one whole xorb, so each adds its 1,000,000 bytes (ranges in xorbs org/x did not upload).

// retryQuota is org/x's quota in these tests: exactly two of the files.
const retryQuota = 2_000_000

// retryEnv is a server with org/x's quota of limit over e0's store, or over a new store holding
// org/big's xorbs 0, 1 and 2 when e0 is nil.
func retryEnv(t *testing.T, e0 *env, limit int64) *env {
	t.Helper()
	e := newEnv(t, func(c *Config) {
		if e0 != nil {
			c.Store = e0.st
		}
		c.Users = mustUsers(t, servertest.UserLine("alice", alicePW, ""))
		c.Now = nil // real time: tokens must outlive the pushes
		c.Quotas = &Quotas{Default: 3 << 20, Repos: []QuotaRule{{"org/x", limit}, {"org/big", 64 << 20}}}
	})
	if e0 != nil {
		e.st = e0.st // newEnv's own store is not the server's
		return e
	}
	for i := range uint64(3) {
		if r := postXorb(t, e, "org/big", i, false); r.status != 200 {
			t.Fatalf("xorb %d to org/big: %v", i, r)
		}
	}
	return e
}

// retryData is the content of xorb i of org/big (postXorb's), a file of its own in org/x.
func retryData(i uint64) []byte { return vectors.SplitMix(1_000_000, 1000+i) }

// retryFile is the file of org/big's xorb i, with its right SHA-256 (1 MB: checked within the
// registration's budget).
func retryFile(t *testing.T, i uint64) shard.File {
	t.Helper()
	return testutil.RepeatingFile(randomXorb(t, 1_000_000, 1000+i), 1, sha256.Sum256(retryData(i)))
}

// retryShard is an upload shard registering the files of org/big's xorbs named by which.
func retryShard(t *testing.T, which ...uint64) []byte {
	t.Helper()
	sh := &shard.Shard{Version: shard.HeaderVersion}
	for _, i := range which {
		sh.Files = append(sh.Files, retryFile(t, i))
	}
	return sh.AppendUpload(nil)
}

// postShard registers body in org/x through route (/v1/shards or /v2/shards), returning its
// status: for /v2/shards 200 only when the answer's frames end with a result (an error frame is
// answered as its registration's failure, 500).
func postShard(t *testing.T, e *env, route string, body []byte) resp {
	t.Helper()
	r := e.do("POST", route, body, servertest.Bearer(e.token("alice", "org/x", scopeWrite, time.Hour))...)
	if route == "/v2/shards" && r.status == 200 && !strings.Contains(string(r.body), `"type":"result"`) {
		r.status = http.StatusInternalServerError
	}
	return r
}

// A shard every file of which the repository serves already adds nothing, and is accepted
// whatever the repository uses: a client retrying a registration whose answer it lost, after the
// first attempt took the repository exactly to its quota, is answered as that attempt was. Before,
// the shard routes refused a repository at or over its quota before reading the shard (507 "over
// its quota"), and the push failed though everything it named was stored. A shard naming a file
// the repository does not serve is still refused, alone or beside files it serves.
func TestQuotaShardRetriedAtQuota(t *testing.T) {
	e := retryEnv(t, nil, retryQuota)
	both := retryShard(t, 0, 1)
	if r := postShard(t, e, "/v1/shards", both); r.status != 200 {
		t.Fatalf("two files of 1 MB, exactly org/x's quota: %v", r)
	}
	if u, err := e.st.RepoUsage(t.Context(), "org/x"); err != nil || u.Stored != retryQuota {
		t.Fatalf("org/x's usage: %+v %v, want exactly its quota of %d: the test proves nothing", u, err, retryQuota)
	}
	check := func(when string) {
		t.Helper()
		for _, route := range []string{"/v1/shards", "/v2/shards"} {
			if r := postShard(t, e, route, both); r.status != 200 {
				t.Fatalf("%s: the same shard again to %s: %v, want it accepted (it adds nothing)", when, route, r)
			}
			if r := postShard(t, e, route, retryShard(t, 1)); r.status != 200 {
				t.Fatalf("%s: one of its files again to %s: %v, want it accepted", when, route, r)
			}
			if r := postShard(t, e, route, retryShard(t, 2)); r.status != http.StatusInsufficientStorage {
				t.Fatalf("%s: a new file of 1 MB to %s: %v, want 507", when, route, r)
			}
			if r := postShard(t, e, route, retryShard(t, 0, 2)); r.status != http.StatusInsufficientStorage {
				t.Fatalf("%s: a file it serves beside a new one to %s: %v, want 507", when, route, r)
			}
		}
	}
	check("at its quota")
	reread(e)
	check("at its quota, read from the store")

	// Over its quota (a lower quota; the usage counted twice while a read runs is the same case).
	over := retryEnv(t, e, retryQuota/2)
	e = over
	check("over its quota")
	if ok, err := e.st.HasFile(t.Context(), "org/x", retryFile(t, 2).Hash); err != nil {
		t.Fatal(err)
	} else if ok {
		t.Fatal("org/x serves the refused file of xorb 2")
	}
	if u, err := e.st.RepoUsage(t.Context(), "org/x"); err != nil || u.Stored != retryQuota {
		t.Fatalf("org/x's usage after the retries: %+v %v, want %d still", u, err, retryQuota)
	}
}

// A repository whose usage passed its quota while a shard's body arrived (the early check let it
// in) still takes a shard of files it serves, and refuses one naming a new file: what the early
// check's refusal lets through, the charge's lets through too.
func TestQuotaShardServedPassesChargeRefusal(t *testing.T) {
	e := retryEnv(t, nil, retryQuota)
	if r := postShard(t, e, "/v1/shards", retryShard(t, 0)); r.status != 200 {
		t.Fatalf("one file of 1 MB within org/x's quota: %v", r)
	}
	c := Claims{Namespace: "org/x", Subject: "alice", Scope: scopeWrite}
	req := httptest.NewRequest("POST", e.base+"/v1/shards", nil)
	if _, err := e.srv.checkQuota(t.Context(), req.Host, e.srv.quotaChecks("org/x"), 0, 0); err != nil {
		t.Fatal(err)
	}
	// Another upload of org/x arriving meanwhile takes it over its quota.
	checks := e.srv.quotaChecks("org/x")
	e.srv.quota.mu.Lock()
	for _, q := range checks {
		e.srv.quota.entry(q.key).arriving += 1_500_000
	}
	e.srv.quota.mu.Unlock()
	defer e.srv.quota.unreserve(checks, 1_500_000)
	w := httptest.NewRecorder()
	if charge, ok := e.srv.chargeShard(w, req, c, retryShard(t, 0), nil); !ok || charge != nil {
		t.Fatalf("the file it serves, over its quota: taken %v, charge %+v (%d %s), want it taken, nothing reserved", ok, charge, w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	if _, ok := e.srv.chargeShard(w, req, c, retryShard(t, 0, 2), nil); ok || w.Code != http.StatusInsufficientStorage {
		t.Fatalf("the file it serves beside a new one, over its quota: taken %v, %d %s; want 507", ok, w.Code, w.Body)
	}
}

// A push whose objects the repository has already, at or over its quota, is answered as one that
// uploads nothing: no actions, no refusal (git-lfs asks the batch for every object a push names,
// stored or not). An object it does not have is still refused.
func TestQuotaBatchOfStoredObjectsAtQuota(t *testing.T) {
	e := retryEnv(t, nil, retryQuota)
	if r := postShard(t, e, "/v1/shards", retryShard(t, 0, 1)); r.status != 200 {
		t.Fatalf("two files of 1 MB, exactly org/x's quota: %v", r)
	}
	object := func(i uint64) lfsbatch.Object {
		sum := sha256.Sum256(retryData(i))
		return lfsbatch.Object{OID: hex.EncodeToString(sum[:]), Size: 1_000_000}
	}
	check := func(when string, e *env) {
		t.Helper()
		r, br := e.batch("org/x", batchBody("upload", []string{"xet"}, object(0), object(1)), servertest.Basic("alice", alicePW)...)
		if r.status != 200 {
			t.Fatalf("%s: a batch of the two stored objects: %v, want 200", when, r)
		}
		for _, o := range br.Objects {
			if o.Error != nil || len(o.Actions) != 0 {
				t.Fatalf("%s: stored object %s answered %+v, want no actions", when, o.OID, o)
			}
		}
		if r, _ := e.batch("org/x", batchBody("upload", []string{"xet"}, object(0), object(2)), servertest.Basic("alice", alicePW)...); r.status != http.StatusInsufficientStorage {
			t.Fatalf("%s: a batch with a new object: %v, want 507", when, r)
		}
	}
	check("at its quota", e)
	check("over its quota", retryEnv(t, e, retryQuota/2))
}

// A push whose xorbs take the repository exactly to its quota registers its shard: the files it
// names lie in xorbs the repository uploaded, which its usage counts whole already, so
// registering them adds nothing. Before, the shard was refused at the quota (the xorb meter and
// the batch admit up to it, the shard's early check refused at it), and the push failed with its
// xorbs stored and counted. A file whose chunks lie in another repository's xorbs still adds its
// ranges and is refused.
func TestQuotaPushReachingItsQuotaExactly(t *testing.T) {
	e := retryEnv(t, nil, 3<<20)
	for i := range uint64(2) {
		if r := postXorb(t, e, "org/x", i, false); r.status != 200 {
			t.Fatalf("xorb %d to org/x: %v", i, r)
		}
	}
	// The quota is exactly what its xorbs count (raw bytes; their bodies, framed, were a little
	// more, which the body meter counted as they arrived: the set-up takes a larger quota).
	e = retryEnv(t, e, retryQuota)
	if u, err := e.st.RepoUsage(t.Context(), "org/x"); err != nil || u.Stored != retryQuota {
		t.Fatalf("org/x's usage: %+v %v, want exactly its quota of %d: the test proves nothing", u, err, retryQuota)
	}
	for _, route := range []string{"/v1/shards", "/v2/shards"} {
		if r := postShard(t, e, route, retryShard(t, 0, 1)); r.status != 200 {
			t.Fatalf("the push's shard to %s, its xorbs at exactly the quota: %v, want it registered", route, r)
		}
		if r := postShard(t, e, route, retryShard(t, 2)); r.status != http.StatusInsufficientStorage {
			t.Fatalf("a file in org/big's xorb to %s: %v, want 507", route, r)
		}
	}
	for i := range uint64(2) {
		if ok, err := e.st.HasFile(t.Context(), "org/x", retryFile(t, i).Hash); err != nil || !ok {
			t.Fatalf("org/x does not serve the file of its xorb %d: %v", i, err)
		}
	}
	if u, err := e.st.RepoUsage(t.Context(), "org/x"); err != nil || u.Stored != retryQuota {
		t.Fatalf("org/x's usage after its shard: %+v %v, want %d still", u, err, retryQuota)
	}
}
