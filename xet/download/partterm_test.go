package download_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// rangeCAS records the ranges fetched and the footers read through it; noFooter makes it offer
// none; failAt makes the fetch of that number (1 the first) fail once, retryably.
type rangeCAS struct {
	cas.Client
	noFooter   bool
	failAt     int
	wholeOnly  bool // refuse (403) ranges the fetch does not list, as a URL granting only its listed ranges whole
	badOffsets bool // a footer whose inner record offsets are wrong
	v0Footer   bool // a version-0 footer: no raw offsets
	cutAt      int  // the body of that fetch (1 the first) ends half-way, once
	mu         sync.Mutex
	ranges     []casapi.ByteRange
	xorbs      []hash.Hash // of ranges
	footers    int
}

func (c *rangeCAS) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	c.mu.Lock()
	c.ranges = append(c.ranges, r)
	c.xorbs = append(c.xorbs, x)
	n := len(c.ranges)
	c.mu.Unlock()
	if n == c.failAt {
		return nil, retry.Mark(errors.New("connection reset (test)"))
	}
	if n == c.cutAt {
		rc, err := c.Client.Fetch(ctx, x, f, r)
		if err != nil {
			return nil, err
		}
		return struct {
			io.Reader
			io.Closer
		}{io.LimitReader(rc, int64(r.Len()/2)), rc}, nil
	}
	if c.wholeOnly && !listed(f, r) {
		return nil, cas.ErrURLExpired
	}
	return c.Client.Fetch(ctx, x, f, r)
}

// listed says whether r is one of the ranges f lists.
func listed(f casapi.XorbFetch, r casapi.ByteRange) bool {
	for _, l := range f.Ranges {
		if l.Bytes == r {
			return true
		}
	}
	return false
}

func (c *rangeCAS) XorbFooter(ctx context.Context, x hash.Hash, f casapi.XorbFetch) (*xorb.Footer, error) {
	c.mu.Lock()
	c.footers++
	c.mu.Unlock()
	if c.noFooter {
		return nil, cas.ErrNoFooter
	}
	foot, err := c.Client.XorbFooter(ctx, x, f)
	if err == nil && c.v0Footer {
		v0 := *foot
		v0.Version, v0.RawEnds = 0, nil
		return &v0, nil
	}
	if err != nil || !c.badOffsets {
		return foot, err
	}
	// Every record but the last one byte later than it is (the ends of the xorb still right).
	bad := *foot
	bad.BoundaryEnds = append([]uint32(nil), foot.BoundaryEnds...)
	for i := range len(bad.BoundaryEnds) - 1 {
		bad.BoundaryEnds[i]++
	}
	return &bad, nil
}

// olderWithNewerLocal: v1 (one xorb, one term) and v2 (three 64 KiB edits, its new chunks in a
// xorb of their own) are stored; v2 is downloaded, and its spans (which hold every chunk of v1's
// term but those the edits replaced) are the local source of v1's download: the history of a file
// fetched newest first.
func olderWithNewerLocal(t *testing.T) (c *rangeCAS, v1 []byte, r1 *upload.FileResult, local spans, dir string) {
	t.Helper()
	cc, v1, _, r1, r2 := localFixture(t)
	c = &rangeCAS{Client: cc}
	dir = t.TempDir()
	local, _ = get(t, cc, r2, filepath.Join(dir, "v2"), nil, false)
	return c, v1, r1, local, dir
}

func getCfg(t *testing.T, cfg download.Config, res *upload.FileResult, path string, loc span.Local) download.Stats {
	t.Helper()
	var st download.Stats
	sum := res.SHA256
	if err := download.Download(context.Background(), cfg, download.Request{
		File: res.FileHash, SHA256: &sum, Size: res.Size, Path: path, Local: loc, Stats: &st}); err != nil {
		t.Fatal(err)
	}
	return st
}

// editBound: the most raw bytes three 64 KiB edits can change in content-defined chunks of at most
// 128 KiB (the chunks the edit touches, and a neighbour on each side before the cut points agree
// again).
const editBound = 3 * (64<<10 + 4*128<<10)

// A term whose chunks are mostly local fetches only its missing chunks (plus one footer), and the
// output verifies.
func TestPartlyLocalTermFetchesMissingChunks(t *testing.T) {
	c, v1, r1, local, dir := olderWithNewerLocal(t)
	out := filepath.Join(dir, "v1")
	st := getCfg(t, download.Config{CAS: c}, r1, out, local)
	sameFile(t, out, v1)
	if st.Local+st.FetchedTerms != int64(len(v1)) || st.FetchedTerms > editBound || st.Local == 0 {
		t.Fatalf("fetched %d of %d bytes, %d local (at most %d should be fetched)", st.FetchedTerms, len(v1), st.Local, editBound)
	}
	// Random data is stored uncompressed: a record is its chunk and an 8-byte header (chunks are
	// 8 KiB at least, so at most FetchedTerms/1024 bytes of headers).
	if onWire := st.Fetched - st.Footers; onWire < st.FetchedTerms || onWire > st.FetchedTerms+st.FetchedTerms/1024+64 {
		t.Fatalf("%d bytes of ranges fetched for %d bytes of chunks", onWire, st.FetchedTerms)
	}
	if c.footers != 1 || st.Footers == 0 || len(c.ranges) < 2 {
		t.Fatalf("%d footer reads (%d bytes), %d ranges: want one footer of the one xorb and a range per edit", c.footers, st.Footers, len(c.ranges))
	}
	t.Logf("v1 with v2 local: %d bytes fetched in %d ranges (+ %d of footer), %d local", st.FetchedTerms, len(c.ranges), st.Footers, st.Local)
}

// Local runs between missing chunks shorter than GapBytes are fetched with them (one request);
// longer ones and those at the term's ends are copied.
func TestPartlyLocalTermCoalescesGaps(t *testing.T) {
	c, v1, r1, local, dir := olderWithNewerLocal(t)
	out := filepath.Join(dir, "v1")
	// The edits are at 1, 5 and 11 MiB: the local run between the first two (about 4 MiB) is
	// under the gap, the one between the last two (about 6 MiB) is not.
	st := getCfg(t, download.Config{CAS: c, GapBytes: 5 << 20}, r1, out, local)
	sameFile(t, out, v1)
	if st.FetchedTerms < 4<<20-editBound || st.FetchedTerms > 4<<20+editBound || len(c.ranges) != 2 {
		t.Fatalf("gap 5 MiB: fetched %d bytes in %d ranges, %d local", st.FetchedTerms, len(c.ranges), st.Local)
	}
}

// A local chunk that does not hash right is fetched instead; the output verifies.
func TestPartlyLocalTermCorruptChunkIsFetched(t *testing.T) {
	c, v1, r1, local, dir := olderWithNewerLocal(t)
	p2 := filepath.Join(dir, "v2")
	b, err := os.ReadFile(p2)
	if err != nil {
		t.Fatal(err)
	}
	b[3<<20] ^= 1 // inside the local run between the first two edits
	if err := os.WriteFile(p2, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "v1")
	st := getCfg(t, download.Config{CAS: c}, r1, out, local)
	sameFile(t, out, v1)
	if st.LocalStale == 0 || st.FetchedTerms <= editBound/2 || st.Local+st.FetchedTerms != int64(len(v1)) {
		t.Fatalf("a corrupt local chunk: %+v", st)
	}
}

// A CAS that offers no footer: the term is fetched whole, as listed in the plan.
func TestPartlyLocalTermWithoutFooter(t *testing.T) {
	c, v1, r1, local, dir := olderWithNewerLocal(t)
	c.noFooter = true
	out := filepath.Join(dir, "v1")
	st := getCfg(t, download.Config{CAS: c}, r1, out, local)
	sameFile(t, out, v1)
	if st.FetchedTerms != int64(len(v1)) || st.Footers != 0 || c.footers != 1 || len(c.ranges) != 1 {
		t.Fatalf("no footer: %+v, %d footer asks, %d ranges", st, c.footers, len(c.ranges))
	}
}

// A range that fails is fetched again alone: the ranges received before it are not.
func TestPartlyLocalTermRetriesOnlyTheFailedRange(t *testing.T) {
	c, v1, r1, local, dir := olderWithNewerLocal(t)
	c.failAt = 2
	out := filepath.Join(dir, "v1")
	st := getCfg(t, download.Config{CAS: c, Retry: retry.Policy{BaseDelay: time.Millisecond}}, r1, out, local)
	sameFile(t, out, v1)
	seen := make(map[casapi.ByteRange]int)
	for _, r := range c.ranges {
		seen[r]++
	}
	if len(c.ranges) != len(seen)+1 || seen[c.ranges[1]] != 2 || st.FetchedTerms > editBound {
		t.Fatalf("ranges fetched: %v (the second failed once); %+v", c.ranges, st)
	}
}

// A URL that refuses ranges inside its listed one (403): the term is fetched whole, the download
// does not fail.
func TestPartlyLocalTermURLRefusesSubranges(t *testing.T) {
	c, v1, r1, local, dir := olderWithNewerLocal(t)
	c.wholeOnly = true
	out := filepath.Join(dir, "v1")
	st := getCfg(t, download.Config{CAS: c}, r1, out, local)
	sameFile(t, out, v1)
	if st.FetchedTerms != int64(len(v1)) || len(c.ranges) != 2 {
		t.Fatalf("sub-ranges refused: %+v, ranges %v", st, c.ranges)
	}
}

// A footer whose offsets are not where the records are: the term is fetched whole, as the plan
// lists it, and the output verifies.
func TestPartlyLocalTermWrongFooterOffsets(t *testing.T) {
	c, v1, r1, local, dir := olderWithNewerLocal(t)
	c.badOffsets = true
	out := filepath.Join(dir, "v1")
	st := getCfg(t, download.Config{CAS: c}, r1, out, local)
	sameFile(t, out, v1)
	if st.FetchedTerms < int64(len(v1)) || len(c.ranges) != 2 {
		t.Fatalf("wrong footer offsets: %+v, ranges %v", st, c.ranges)
	}
}
