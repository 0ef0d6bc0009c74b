package test

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// xorbBytesProxy serves backend and counts the response body bytes of the signed xorb route
// (/xorbs/…: the bytes a download receives from the CAS, footers included).
func xorbBytesProxy(t *testing.T, backend string) (string, *atomic.Int64) {
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = func(resp *http.Response) error {
		if strings.HasPrefix(resp.Request.URL.Path, "/xorbs/") {
			resp.Body = countedBody{resp.Body, &n}
		}
		return nil
	}
	hs := httptest.NewServer(servertest.FullDuplex(p))
	t.Cleanup(hs.Close)
	return hs.URL, &n
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countedBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// editAt overwrites n regions of size bytes at random places of b (seeded) with new random bytes.
func editAt(b []byte, n, size int, seed uint64) []byte {
	out := append([]byte(nil), b...)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := 0; i < n; i++ {
		at := r.IntN(len(b) - size)
		copy(out[at:], testutil.RandomBytes(size, seed*100+uint64(i)))
	}
	return out
}

// pushHistory pushes four versions of model.bin from work, one push each (each push's new chunks
// in xorbs of their own; v1 is one xorb, one term): 8 MiB of random data, then three 4 KiB edits
// at random places per version.
func (e *env) pushHistory(work, remote string) [][]byte {
	versions := [][]byte{testutil.RandomBytes(8<<20, 501)}
	for i := 1; i < 4; i++ {
		versions = append(versions, editAt(versions[i-1], 3, 4<<10, uint64(510+i)))
	}
	for i, v := range versions {
		e.pushAndClone(work, remote, "", v, "v"+string(rune('1'+i)))
	}
	return versions
}

// fetchHistory clones remote (which downloads v4), calls cloned, and runs `git lfs fetch --all`
// there (v1..v3, with v4 local), checks the objects, and returns the bytes of the older versions
// and the bytes the agents fetched for them (decoded; from their log).
func (e *env) fetchHistory(t *testing.T, remote string, versions [][]byte, cloned func()) (sum, fetched int64) {
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	cloned()
	e.git(clone, "lfs", "fetch", "--all")
	if n := checkLFSObjects(t, clone); n != 4 {
		t.Fatalf("%d LFS objects in the clone, want 4", n)
	}
	for _, v := range versions[:3] {
		sum += int64(len(v))
		tr := e.downloadOf(oidOf(v))
		fetched += tr.NewBytes
		t.Logf("%s: fetched %d of %d bytes, %d local", oidOf(v)[:8], tr.NewBytes, tr.Size, tr.Deduped)
	}
	return sum, fetched
}

// historyBound explains the bound both history tests assert: v1..v3 differ from v4 (local) by 9, 6
// and 3 edits: 18 edits of 4 KiB, each costing the chunks it touches (about two of 64 KiB on
// average, at most 128 KiB each) and its share of the footers and coalesced gaps: about 3 MiB of
// the 24. A third of the sum leaves room for chunk sizes; fetching every term that is not whole
// here moves most of the 24 MiB (v1 alone is one term of 8 MiB).
func historyBound(sum int64) int64 { return sum / 3 }

// The history of a file fetched at once (a clone, then `git lfs fetch --all`) takes the older
// versions from the chunks of the newer one here: a term of an old version mostly held locally
// fetches only its missing chunks. Against our server (its signed URLs serve the footers); the
// bytes received from the CAS counted by a proxy.
func TestDeltaFetchAllHistory(t *testing.T) {
	e := newEnv(t)
	e.install()
	s := startServer(t, "")
	proxy, received := xorbBytesProxy(t, s.url)
	work, remote := batchRepo(t, e, proxy+"/team/history.git/info/lfs")
	versions := e.pushHistory(work, remote)
	var before int64
	sum, fetched := e.fetchHistory(t, remote, versions, func() { before = received.Load() })
	got := received.Load() - before
	t.Logf("v1..v3 (%d bytes): %d bytes fetched, %d bytes of xorbs received (%.1f %%)", sum, fetched, got, 100*float64(got)/float64(sum))
	if got > historyBound(sum) || fetched > historyBound(sum) {
		t.Errorf("fetch --all received %d bytes (%d decoded) for %d bytes of older versions, want at most a third", got, fetched, sum)
	}
}

// The same against xet-server over S3 (versitygw) with presigned URLs: the footers are read from
// the bucket with a suffix range of the presigned GET.
func TestDeltaFetchAllHistoryS3(t *testing.T) {
	buildServer(t)
	_, _, backends := s3Pair(t)
	e := newEnv(t)
	e.install()
	work, remote := batchRepo(t, e, backends[0]+"/team/history.git/info/lfs")
	versions := e.pushHistory(work, remote)
	sum, fetched := e.fetchHistory(t, remote, versions, func() {})
	t.Logf("v1..v3 (%d bytes): %d bytes fetched from the bucket", sum, fetched)
	if fetched > historyBound(sum) {
		t.Errorf("fetch --all fetched %d bytes for %d bytes of older versions, want at most a third", fetched, sum)
	}
}
