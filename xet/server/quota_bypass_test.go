package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// The quota bypasses of issue 41, item 6: each is a way to store more than a repository's quota.
// A quota of 3 MiB; xorbs of 1,000,000 raw bytes, three of which fit.

func quotaEnv(t *testing.T, q *Quotas) *env {
	t.Helper()
	return newEnv(t, func(c *Config) {
		c.Users = mustUsers(t, servertest.UserLine("alice", alicePW, ""))
		c.Now = nil // real time: tokens must outlive the pushes
		c.Quotas = q
	})
}

// postXorb uploads xorb n (1,000,000 raw bytes) for repo with a token; chunked hides its length.
func postXorb(t *testing.T, e *env, repo string, n uint64, chunked bool) resp {
	t.Helper()
	x := randomXorb(t, 1_000_000, 1000+n)
	var body io.Reader = bytes.NewReader(x.Body)
	if chunked {
		body = io.MultiReader(body) // no Len: sent chunked
	}
	req, err := http.NewRequest("POST", e.base+"/v1/xorbs/default/"+x.Hash.String(), body)
	if err != nil {
		t.Fatal(err)
	}
	if chunked && req.ContentLength != 0 {
		t.Fatal("the body's length is known: it would not be sent chunked")
	}
	req.Header.Set("Authorization", "Bearer "+e.token("alice", repo, scopeWrite, time.Hour))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, body: b}
}

// reread makes the server read usages from the store at its next check (what a minute does).
func reread(e *env) {
	e.srv.quota.mu.Lock()
	clear(e.srv.quota.m)
	e.srv.quota.mu.Unlock()
}

// Xorbs that no shard registers count: once the usage is read again from the store, the xorbs a
// repository uploaded are still counted (before, only registered files were, so the quota's
// count forgot them a minute later and uploads went on).
func TestQuotaCountsUnregisteredXorbs(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20})
	for i := range 3 {
		if r := postXorb(t, e, "org/x", uint64(i), false); r.status != 200 {
			t.Fatalf("xorb %d within the quota: %v", i, r)
		}
	}
	reread(e)
	r := postXorb(t, e, "org/x", 3, false)
	if r.status != http.StatusInsufficientStorage || !strings.Contains(string(r.body), "repository org/x is over its 3 MiB quota") {
		t.Fatalf("a fourth xorb after three that no shard names: %v, want 507 naming the quota", r)
	}
}

// A chunked body counts the bytes that arrived (before, it added nothing to the usage).
func TestQuotaCountsChunkedXorbs(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20})
	for i := range 3 {
		if r := postXorb(t, e, "org/x", uint64(i), true); r.status != 200 {
			t.Fatalf("chunked xorb %d within the quota: %v", i, r)
		}
	}
	if r := postXorb(t, e, "org/x", 3, true); r.status != http.StatusInsufficientStorage {
		t.Fatalf("a fourth chunked xorb: %v, want 507", r)
	}
}

// The batch's size is the client's word: a client that announces 1 byte and then sends a xorb of
// more than the quota is refused at the xorb route, while the bytes arrive (before, the xorb
// route refused only a repository already at its quota).
func TestQuotaDoesNotTrustBatchSize(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20})
	r, br := e.batch("org/x", batchBody("upload", []string{"xet"}, lfsbatch.Object{OID: strings.Repeat("ab", 32), Size: 1}), servertest.Basic("alice", alicePW)...)
	if r.status != 200 {
		t.Fatalf("batch: %v", r)
	}
	tok := br.Objects[0].Actions["upload"].Header[lfsbatch.HeaderAccessToken]
	x := randomXorb(t, 4_000_000, 7)
	res := e.do("POST", "/v1/xorbs/default/"+x.Hash.String(), x.Body, "Authorization", "Bearer "+tok)
	if res.status != http.StatusInsufficientStorage {
		t.Fatalf("a 4 MB xorb after a batch that said 1 byte: %v, want 507", res)
	}
	if ok, _ := e.st.HasXorb(t.Context(), x.Hash); ok {
		t.Fatal("the refused xorb was stored")
	}
}

// A shard is checked by what it adds: a repository at 2 of its 3 MiB that registers a file of
// 2.5 MB deduplicated against another repository's xorbs (so it uploads none) is refused (before,
// only a repository already at its quota was).
func TestQuotaChecksWhatShardAdds(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20})
	theirs := vectors.SplitMix(2_500_000, 21)
	if err := e.push(t, "org/y", theirs); err != nil {
		t.Fatal(err)
	}
	if err := e.push(t, "org/x", vectors.SplitMix(2_000_000, 22)); err != nil {
		t.Fatal(err)
	}
	// A batch for a small object (which the pre-check lets through) gives org/x a CAS token.
	r, br := e.batch("org/x", batchBody("upload", []string{"xet"}, lfsbatch.Object{OID: strings.Repeat("cd", 32), Size: 1}), servertest.Basic("alice", alicePW)...)
	if r.status != 200 {
		t.Fatalf("batch: %v", r)
	}
	sess := upload.NewSession(upload.Config{CAS: casClient(t, br.Objects[0].Actions["upload"], "alice", alicePW), GlobalDedupe: true})
	defer sess.Close()
	sum := sha256.Sum256(theirs)
	res, err := sess.Upload(context.Background(), bytes.NewReader(theirs), &sum, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.NewBytes != 0 {
		t.Fatalf("the file was not deduplicated against org/y's xorbs (%d new bytes): the test proves nothing", res.NewBytes)
	}
	err = sess.Finish(context.Background())
	if err == nil || !strings.Contains(err.Error(), "repository org/x is over its 3 MiB quota on 127.0.0.1:") {
		t.Fatalf("a shard adding 2.5 MB to 2 of 3 MiB: %v, want the quota's refusal", err)
	}
}

// A user's quota counts the user's repositories of every type, as the Hub names them: models
// (alice/m), datasets (datasets/alice/d) and spaces (spaces/alice/s). Before, datasets/alice/d
// counted for an owner "datasets".
func TestOwnerQuotaCountsTypedRepositories(t *testing.T) {
	e := quotaEnv(t, &Quotas{Owners: []QuotaRule{{"alice", 3 << 20}}})
	if err := e.push(t, "alice/m", vectors.SplitMix(2_000_000, 31)); err != nil {
		t.Fatal(err)
	}
	for _, repo := range []string{"datasets/alice/d", "spaces/alice/s"} {
		err := e.push(t, repo, vectors.SplitMix(2_000_000, 32))
		if err == nil || !strings.Contains(err.Error(), "the repositories of alice are over their 3 MiB quota") {
			t.Fatalf("a push to %s beside alice/m: %v, want alice's quota's refusal", repo, err)
		}
	}
	if err := e.push(t, "datasets/alice/d", vectors.SplitMix(900_000, 33)); err != nil {
		t.Fatalf("a push within alice's quota: %v", err)
	}
	reread(e)
	if err := e.push(t, "spaces/alice/s", vectors.SplitMix(500_000, 34)); err == nil {
		t.Fatal("a push past alice's quota once her usage was read from the store (models and datasets together)")
	}
}

// The store records every upload, quotas on or off: xorbs a repository uploaded while the server
// ran without quotas count once it runs with them (before, only those uploaded under quotas did).
func TestQuotaCountsUploadsFromBeforeQuotas(t *testing.T) {
	before := quotaEnv(t, nil)
	for i := range 3 {
		if r := postXorb(t, before, "org/x", uint64(i), false); r.status != 200 {
			t.Fatalf("xorb %d without quotas: %v", i, r)
		}
	}
	e := newEnv(t, func(c *Config) {
		c.Store = before.st
		c.Users = mustUsers(t, servertest.UserLine("alice", alicePW, ""))
		c.Now = nil
		c.Quotas = &Quotas{Default: 3 << 20}
	})
	r := postXorb(t, e, "org/x", 3, false)
	if r.status != http.StatusInsufficientStorage || !strings.Contains(string(r.body), "repository org/x is over its 3 MiB quota") {
		t.Fatalf("a fourth xorb after three uploaded without quotas: %v, want 507 naming the quota", r)
	}
}

// A push's batch of objects that each fit the quota but together do not is refused as a push over
// the quota (507, "with this push"), not as one object larger than the quota (413: git-lfs shows
// the message, which then named the batch's total as "an object of" that size). One object over
// the quota alone is still the 413.
func TestQuotaBatchTotalIsNotAnObject(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20})
	objs := []lfsbatch.Object{{OID: strings.Repeat("ab", 32), Size: 2 << 20}, {OID: strings.Repeat("cd", 32), Size: 2 << 20}}
	r, _ := e.batch("org/x", batchBody("upload", []string{"xet"}, objs...), servertest.Basic("alice", alicePW)...)
	if r.status != http.StatusInsufficientStorage || !strings.Contains(string(r.body), "with this push") || strings.Contains(string(r.body), "an object of") {
		t.Fatalf("two objects of 2 MiB against a quota of 3 MiB: %v, want 507 over the quota with this push", r)
	}
	r, _ = e.batch("org/x", batchBody("upload", []string{"xet"}, lfsbatch.Object{OID: strings.Repeat("ef", 32), Size: 4 << 20}), servertest.Basic("alice", alicePW)...)
	if r.status != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.body), "an object of 4 MiB is larger than the 3 MiB quota") {
		t.Fatalf("one object of 4 MiB against a quota of 3 MiB: %v, want 413 naming the object", r)
	}
}

// A body counted as it arrives is refused as "over its quota" (507) however its bytes are split
// into reads: the size of one read is not the size of an object (CI saw a 413 "an object of
// 3.1 MiB" when the whole xorb had arrived before the server's first read).
func TestQuotaMeterRefusalDoesNotDependOnReadSize(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20})
	req := httptest.NewRequest("POST", e.base+"/v1/xorbs/default/x", nil)
	m := e.srv.meter(req, "org/x", bytes.NewReader(make([]byte, 4_000_000)))
	defer m.done()
	_, err := m.Read(make([]byte, 4_000_000)) // the whole body in one read
	var qe *quotaError
	if !errors.As(err, &qe) || qe.status != http.StatusInsufficientStorage {
		t.Fatalf("one read of 4 MB over a 3 MiB quota: %v, want 507", err)
	}
}

// A shard of several files whose registration passes the quota is over it "with this push" (507),
// not "an object of" the shard's total (413): that named the sum of a batch of small files as one
// object too large for the quota, which no single file of it was. A shard whose one file alone is
// larger than the quota is still that file's 413.
func TestShardOfManyFilesOverQuotaIsNotOneObject(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20, Repos: []QuotaRule{{"org/y", 64 << 20}}})
	files := [][]byte{vectors.SplitMix(900_000, 41), vectors.SplitMix(900_000, 42), vectors.SplitMix(900_000, 43), vectors.SplitMix(900_000, 46)}
	big := vectors.SplitMix(3_500_000, 44)
	for _, f := range append(files, big) {
		if err := e.push(t, "org/y", f); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.push(t, "org/x", vectors.SplitMix(1_000_000, 45)); err != nil {
		t.Fatal(err)
	}
	register := func(what string, data ...[]byte) error {
		t.Helper()
		r, br := e.batch("org/x", batchBody("upload", []string{"xet"}, lfsbatch.Object{OID: strings.Repeat("ef", 32), Size: 1}), servertest.Basic("alice", alicePW)...)
		if r.status != 200 {
			t.Fatalf("batch: %v", r)
		}
		sess := upload.NewSession(upload.Config{CAS: casClient(t, br.Objects[0].Actions["upload"], "alice", alicePW), GlobalDedupe: true})
		defer sess.Close()
		for _, d := range data {
			sum := sha256.Sum256(d)
			res, err := sess.Upload(t.Context(), bytes.NewReader(d), &sum, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.NewBytes != 0 {
				t.Fatalf("%s: a file was not deduplicated against org/y's xorbs (%d new bytes): the test proves nothing", what, res.NewBytes)
			}
		}
		return sess.Finish(t.Context())
	}
	// 1.0 MB used; the shard adds 3.6 MB, more than the 3 MiB quota, but each file is 0.9 MB.
	err := register("four files", files...)
	if err == nil || !strings.Contains(err.Error(), "with this push") || strings.Contains(err.Error(), "an object of") {
		t.Fatalf("a shard of four files of 0.9 MB passing a 3 MiB quota: %v, want the quota's 507 with this push", err)
	}
	err = register("one big file", big)
	if err == nil || !strings.Contains(err.Error(), "register the file: an object of 3.3 MiB is larger than the 3 MiB quota") {
		t.Fatalf("a shard of one file of 3.5 MB against a 3 MiB quota: %v, want its 413", err)
	}
}

// A xorb counts against a quota by its raw bytes, as the usage counts it, not by the compressed
// bytes its body brings: a body of about 40 KB holding 8 MiB of compressible raw data is refused
// against a 3 MiB quota, and nothing of it is stored. Before, the meter counted only the body's
// bytes, so the xorb was taken (200) and the repository used 8 MiB of its 3 MiB at once; a
// huggingface.js-style xorb (up to 1 GiB raw in 64 MiB of records) took it over by 1 GiB an
// upload, and each of the upload slots did so at once.
func TestQuotaCountsXorbsByRawBytes(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20})
	bld := xorb.NewBuilder(xorb.PolicyLZ4)
	for i := range 64 {
		c := make([]byte, xorb.MaxChunkRaw)
		binary.LittleEndian.PutUint64(c, uint64(i)+1) // distinct chunks, all but zeros
		bld.Add(c, hash.Chunk(c))
	}
	x := bld.Finish()
	if len(x.Body) > 1<<20 {
		t.Fatalf("the xorb's body is %d bytes: not the compressible body the test needs", len(x.Body))
	}
	res := e.do("POST", "/v1/xorbs/default/"+x.Hash.String(), x.Body, "Authorization", "Bearer "+e.token("alice", "org/x", scopeWrite, time.Hour))
	if res.status != http.StatusInsufficientStorage {
		t.Fatalf("a xorb of 8 MiB raw in a body of %d bytes against a 3 MiB quota: %v, want 507", len(x.Body), res)
	}
	if ok, _ := e.st.HasXorb(t.Context(), x.Hash); ok {
		t.Fatal("the refused xorb was stored")
	}
	if r := postXorb(t, e, "org/x", 0, false); r.status != 200 {
		t.Fatalf("a xorb within the quota after the refusal (its reservation given back): %v", r)
	}
}

// A shard whose file the repository registered already adds nothing to its usage, and is not
// refused for what its ranges would add: a client retrying a registration whose answer it lost
// (or pushing the same file again) at 2.5 of 3 MiB, the 2.5 MB being that very file's ranges in
// another repository's xorbs. Before, ShardAdds counted the file's ranges again and the retry got
// 507 "over its 3 MiB quota with this push", though its first attempt had registered the file.
func TestQuotaShardOfRegisteredFileAddsNothing(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20})
	theirs := vectors.SplitMix(2_500_000, 23)
	if err := e.push(t, "org/y", theirs); err != nil {
		t.Fatal(err)
	}
	register := func() error {
		t.Helper()
		r, br := e.batch("org/x", batchBody("upload", []string{"xet"}, lfsbatch.Object{OID: strings.Repeat("cd", 32), Size: 1}), servertest.Basic("alice", alicePW)...)
		if r.status != 200 {
			t.Fatalf("batch: %v", r)
		}
		sess := upload.NewSession(upload.Config{CAS: casClient(t, br.Objects[0].Actions["upload"], "alice", alicePW), GlobalDedupe: true})
		defer sess.Close()
		sum := sha256.Sum256(theirs)
		res, err := sess.Upload(t.Context(), bytes.NewReader(theirs), &sum, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.NewBytes != 0 {
			t.Fatalf("the file was not deduplicated against org/y's xorbs (%d new bytes): the test proves nothing", res.NewBytes)
		}
		return sess.Finish(t.Context())
	}
	if err := register(); err != nil {
		t.Fatalf("registering 2.5 MB of org/y's ranges in org/x, within its 3 MiB: %v", err)
	}
	if err := register(); err != nil {
		t.Fatalf("registering the same file again: %v, want it accepted (it adds nothing)", err)
	}
}

// A repository pays for every file it serves, however its files' oids collide. Alice's own
// repository org/big holds four xorbs of 1 MB; org/x (3 MiB) registers files naming them, each
// file one xorb twenty times over (20 MB, over the registration's SHA-256 budget: registered
// unverified, on the shard's word for its oid), all claiming the same oid. The first one written
// is the oid's mapping; the others are still members of org/x, served by their file hash. Before,
// the usage counted only the files org/x's mappings name, so once it was read again from the
// store org/x used 1 MB of its 3 MiB while serving 3 MB, and each later registration of that oid
// added to what it served for nothing: a fourth file was taken, and so on without end.
func TestQuotaCountsFilesWhoseOidCollides(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20, Repos: []QuotaRule{{"org/big", 64 << 20}}})
	tok := e.token("alice", "org/x", scopeWrite, time.Hour)
	oid := [32]byte{9} // the same wrong oid for every file: no check reads it
	register := func(i uint64) (hash.Hash, resp) {
		t.Helper()
		x := randomXorb(t, 1_000_000, 1000+i)
		if r := postXorb(t, e, "org/big", i, false); r.status != 200 {
			t.Fatalf("xorb %d to org/big: %v", i, r)
		}
		f := testutil.RepeatingFile(x, 20, oid)
		body := (&shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}}).AppendUpload(nil)
		return f.Hash, e.do("POST", "/v1/shards", body, servertest.Bearer(tok)...)
	}
	for i := range uint64(3) {
		if _, r := register(i); r.status != 200 {
			t.Fatalf("file %d, 1 MB of org/big's xorbs, within org/x's 3 MiB: %v", i, r)
		}
	}
	if u, err := e.st.RepoUsage(t.Context(), "org/x"); err != nil || u.Stored < 3_000_000 || u.Files != 3 {
		t.Fatalf("org/x's usage after three files of 1 MB each: %+v, %v; want 3 files, 3 MB", u, err)
	}
	reread(e)
	file, r := register(3)
	if r.status != http.StatusInsufficientStorage {
		t.Fatalf("a fourth file of 1 MB at 3 of 3 MiB, once the usage was read from the store: %v, want 507", r)
	}
	if r := e.do("GET", "/v1/reconstructions/"+file.String(), nil, servertest.Bearer(tok)...); r.status != http.StatusNotFound {
		t.Fatalf("the refused file is served: %v", r)
	}
}

// A xorb the repository uploaded, and the store keeps, adds nothing when it is sent again: a
// client retrying an upload whose answer it lost (or a second push of the same data) at 3 of its
// 3 MiB, the 3 MB being its three xorbs, is answered as the first attempt was. Before, the meter
// counted the retry's body as it arrived on top of the usage that already counted the xorb, and
// refused it with 507 "over its 3 MiB quota": the push failed though it stored nothing.
func TestQuotaXorbUploadedAgainAddsNothing(t *testing.T) {
	e := quotaEnv(t, &Quotas{Default: 3 << 20})
	for i := range 3 {
		if r := postXorb(t, e, "org/x", uint64(i), false); r.status != 200 {
			t.Fatalf("xorb %d within the quota: %v", i, r)
		}
	}
	for _, chunked := range []bool{false, true} {
		if r := postXorb(t, e, "org/x", 2, chunked); r.status != 200 {
			t.Fatalf("xorb 2 sent again (chunked %v): %v, want it accepted (it adds nothing)", chunked, r)
		}
	}
	reread(e)
	if r := postXorb(t, e, "org/x", 1, false); r.status != 200 {
		t.Fatalf("xorb 1 sent again once the usage was read from the store: %v", r)
	}
	if r := postXorb(t, e, "org/x", 3, false); r.status != http.StatusInsufficientStorage {
		t.Fatalf("a fourth, new xorb: %v, want 507", r)
	}
}

// A xorb that gc deleted counts again when its repository uploads it again: its upload record
// outlives it, but the usage counts a xorb only while the store keeps it, so sending it again adds
// its bytes. A repository of 3 MiB whose two xorbs of 1.2 MB gc deleted, and which then uploaded a
// third, sends the two again: the first is taken, the second refused. Before, the store asked the
// quota nothing of an upload its record named (as if the usage counted it) and the server did not
// add it to the usage it kept: both were taken, and the repository held 3.6 MB of its 3 MiB (with
// compressible xorbs, whose bodies the meter barely counts, as much as it had ever uploaded).
func TestQuotaCountsXorbUploadedAgainAfterGC(t *testing.T) {
	g := newGCQuotaStore(t)
	e := g.server(3 << 20)
	within := func(what string) {
		t.Helper()
		if u, err := g.st.RepoUsage(t.Context(), "org/x"); err != nil || u.Stored > 3<<20 {
			t.Fatalf("%s: org/x uses %d bytes of its 3 MiB (%v)", what, u.Stored, err)
		}
	}
	for _, seed := range []uint64{1, 2} {
		if r := g.put(e, seed); r.status != 200 {
			t.Fatalf("xorb %d: %v", seed, r)
		}
	}
	g.collect() // both to the trash
	g.collect() // deleted
	if u, err := g.st.RepoUsage(t.Context(), "org/x"); err != nil || u.Stored != 0 {
		t.Fatalf("org/x once gc deleted its xorbs: %+v %v, want nothing", u, err)
	}
	reread(e)
	if r := g.put(e, 3); r.status != 200 {
		t.Fatalf("xorb 3: %v", r)
	}
	if r := g.put(e, 1); r.status != 200 {
		t.Fatalf("xorb 1 again, 2.4 of 3 MiB: %v", r)
	}
	within("xorb 1 sent again")
	if r := g.put(e, 2); r.status != http.StatusInsufficientStorage {
		within("xorb 2 sent again")
		t.Fatalf("xorb 2 again, 3.6 MB of 3 MiB: %v, want 507", r)
	}
}

// A xorb in gc's trash still counts (the usage counts what the store keeps, its trash too), so
// sending it again adds nothing and is taken at the quota: the retry of a push whose shard never
// came, a day after gc moved its xorbs aside. Before, the xorb route looked for the xorb among the
// stored ones only, counted its body as it arrived on top of the usage that counted it already,
// and refused it with 507 "over its quota" at a usage it would not change.
func TestQuotaXorbInTrashSentAgainAddsNothing(t *testing.T) {
	g := newGCQuotaStore(t)
	e := g.server(3 << 20)
	for _, seed := range []uint64{1, 2} {
		if r := g.put(e, seed); r.status != 200 {
			t.Fatalf("xorb %d: %v", seed, r)
		}
	}
	g.collect() // one run: both to the trash, not deleted
	if ok, err := g.st.HasXorb(t.Context(), randomXorb(t, gcQuotaXorbBytes, 1).Hash); err != nil || ok {
		t.Fatalf("xorb 1 is still stored after gc (%v): the test proves nothing", err)
	}
	u, err := g.st.RepoUsage(t.Context(), "org/x")
	if err != nil || u.Stored != 2*gcQuotaXorbBytes {
		t.Fatalf("org/x with its two xorbs in the trash: %+v %v, want %d stored", u, err, 2*gcQuotaXorbBytes)
	}
	e = g.server(int64(u.Stored)) // exactly at its quota
	if r := g.put(e, 1); r.status != 200 {
		t.Fatalf("xorb 1 sent again from the trash, at the quota it already counts in: %v, want it taken", r)
	}
	if u, err := g.st.RepoUsage(t.Context(), "org/x"); err != nil || u.Stored != 2*gcQuotaXorbBytes {
		t.Fatalf("org/x after xorb 1 was sent again: %+v %v, want %d still", u, err, 2*gcQuotaXorbBytes)
	}
	if r := g.put(e, 3); r.status != http.StatusInsufficientStorage {
		t.Fatalf("a new xorb at the quota: %v, want 507", r)
	}
}

// gcQuotaXorbBytes: the size of the xorbs the gc quota tests send, over a pack's largest blob, so
// that a file gc moves holds each whole.
const gcQuotaXorbBytes = 1_200_000

// gcQuotaStore is the set-up of the tests of quotas across gc runs: a store on a clock the test
// moves, servers over it with a quota, and alice's xorbs of org/x.
type gcQuotaStore struct {
	t   *testing.T
	st  *store.Store
	now time.Time
}

func newGCQuotaStore(t *testing.T) *gcQuotaStore {
	g := &gcQuotaStore{t: t, now: time.Now()}
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return g.now }})
	if err != nil {
		t.Fatal(err)
	}
	g.st = st
	return g
}

// server is a server over the store with a quota of limit bytes for every repository.
func (g *gcQuotaStore) server(limit int64) *env {
	return newEnv(g.t, func(c *Config) {
		c.Store = g.st
		c.Users = mustUsers(g.t, servertest.UserLine("alice", alicePW, ""))
		c.Now = nil
		c.Quotas = &Quotas{Default: limit}
	})
}

// put sends xorb seed of org/x to e as alice.
func (g *gcQuotaStore) put(e *env, seed uint64) resp {
	g.t.Helper()
	x := randomXorb(g.t, gcQuotaXorbBytes, seed)
	return e.do("POST", "/v1/xorbs/default/"+x.Hash.String(), x.Body, servertest.Bearer(e.token("alice", "org/x", scopeWrite, time.Hour))...)
}

// collect moves the clock past gc's grace and runs gc once: a first run moves what nothing names
// to the trash, a second deletes it.
func (g *gcQuotaStore) collect() {
	g.t.Helper()
	g.now = g.now.Add(2 * time.Hour)
	if _, err := store.NewMaint(g.st).Collect(g.t.Context(), store.GCOptions{Grace: time.Hour}); err != nil {
		g.t.Fatal(err)
	}
}
