package download_test

import (
	"context"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas/castest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// splitBound is the SplitBytes of these tests: terms of 3 MiB are split into ranges of about 512 KiB.
const (
	splitBound = 512 << 10
	splitPart  = 3 << 20
	splitParts = 4
)

// termsFixture stores splitParts random parts of splitPart bytes, each in a xorb of its own, and
// then their concatenation in the same session: a file of splitParts large terms (one per xorb,
// but for the chunks around the joins), as a 1 GiB file is 16 terms of 64 MiB.
func termsFixture(t *testing.T) (c *rangeCAS, data []byte, res *upload.FileResult) {
	t.Helper()
	cc := castest.NewCounting(embeddedtest.New(t))
	var parts [][]byte
	for i := range splitParts {
		p := testutil.RandomBytes(splitPart, uint64(300+i))
		parts = append(parts, p)
		data = append(data, p...)
	}
	rs := uploadWith(t, upload.Config{CAS: cc, Policy: xorb.PolicyNone, SeparateFiles: true}, append(parts, data)...)
	res = rs[len(rs)-1]
	plan, err := cc.Reconstruct(context.Background(), res.FileHash, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := 0
	for _, tm := range plan.Terms {
		if tm.UnpackedLength > 2<<20 {
			big++
		}
	}
	if big != splitParts {
		t.Fatalf("fixture: %d terms over 2 MiB of %d, want %d", big, len(plan.Terms), splitParts)
	}
	return &rangeCAS{Client: cc}, data, res
}

// splitCfg is a download through an adapting (network) client, with n ranges in flight.
func splitCfg(c cas.Client, n int) download.Config {
	return download.Config{CAS: c, Adapt: concurrency.Fixed(n), SplitBytes: splitBound, Retry: retry.Policy{BaseDelay: time.Millisecond}}
}

// byXorb groups the ranges fetched by xorb, in the order they were asked for.
func byXorb(c *rangeCAS) map[hash.Hash][]casapi.ByteRange {
	m := make(map[hash.Hash][]casapi.ByteRange)
	for i, r := range c.ranges {
		m[c.xorbs[i]] = append(m[c.xorbs[i]], r)
	}
	return m
}

// Large terms are fetched as bounded ranges of whole chunks, asked for in file order (one in
// flight here, so the order is the plan's), every byte of a term once; the file verifies, and
// Request.OnPart hears of every byte once.
func TestSplitTermsInFileOrder(t *testing.T) {
	c, data, res := termsFixture(t)
	out := filepath.Join(t.TempDir(), "out")
	var st download.Stats
	var parts int64
	sum := res.SHA256
	err := download.Download(context.Background(), splitCfg(c, 1), download.Request{
		File: res.FileHash, SHA256: &sum, Size: res.Size, Path: out, Stats: &st,
		OnPart: func(sp span.Span) { atomic.AddInt64(&parts, sp.Bytes()) }})
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, out, data)
	if st.FetchedTerms != int64(len(data)) || parts != int64(len(data)) {
		t.Fatalf("decoded %d bytes, parts reported %d, of %d", st.FetchedTerms, parts, len(data))
	}
	split := 0
	var onWire int64
	for x, rs := range byXorb(c) {
		for i, r := range rs {
			onWire += int64(r.Len())
			if i > 0 && r.Start <= rs[i-1].End {
				t.Fatalf("xorb %s: range %s asked after %s (out of order or twice)", x, r.Header(), rs[i-1].Header())
			}
		}
		if len(rs) > 1 { // the xorb of one part (the chunks around the joins are one range of another)
			split++
			for i, r := range rs {
				// Ranges of about splitBound bytes by the average chunk; chunks are at most
				// twice the average, and each record has an 8-byte header.
				if r.Len() > 2*splitBound+1024 || (i > 0 && r.Start != rs[i-1].End+1) {
					t.Fatalf("xorb %s: range %d is %s (%d bytes), after %s", x, i, r.Header(), r.Len(), rs[max(i-1, 0)].Header())
				}
			}
		}
	}
	if split != splitParts || c.footers != splitParts || onWire != st.Fetched-st.Footers || onWire > int64(len(data))+int64(len(data))/1024+1024 {
		t.Fatalf("%d xorbs split (want %d), %d footers read, %d bytes of ranges for %d of file (%+v)", split, splitParts, c.footers, onWire, len(data), st)
	}
	t.Logf("%d ranges, %d bytes on the wire for %d bytes, SHA-256 behind at most %d", len(c.ranges), onWire, len(data), st.SHABehind)
}

// The defect split ranges fix: with whole terms in flight at once over a link that they share,
// the first term ends with the others and nearly all of them is written ahead of the SHA-256's
// in-order prefix, to be read back after the transfer; split ranges started in file order keep
// it to about the ranges in flight.
func TestSplitKeepsSHA256WithTheTransfer(t *testing.T) {
	c, data, res := termsFixture(t)
	dir := t.TempDir()
	link := &fairCAS{Client: c, link: newFairLink()}
	whole := getCfg(t, download.Config{CAS: link, Concurrency: 4}, res, filepath.Join(dir, "whole"), nil)
	split := getCfg(t, splitCfg(link, 4), res, filepath.Join(dir, "split"), nil)
	sameFile(t, filepath.Join(dir, "split"), data)
	t.Logf("SHA-256 behind at most: whole terms %d bytes, split %d bytes (of %d)", whole.SHABehind, split.SHABehind, len(data))
	if whole.SHABehind < splitPart {
		t.Fatalf("whole terms: SHA-256 at most %d bytes behind: the fixture does not show the defect", whole.SHABehind)
	}
	if split.SHABehind > 8*splitBound {
		t.Fatalf("split terms: SHA-256 %d bytes behind, want at most %d (4 ranges in flight)", split.SHABehind, 8*splitBound)
	}
}

// A CAS that offers no footer gets each large term whole, once; the footer is asked once per xorb.
func TestSplitWithoutFooterFetchesTermsWhole(t *testing.T) {
	c, data, res := termsFixture(t)
	c.noFooter = true
	out := filepath.Join(t.TempDir(), "out")
	st := getCfg(t, splitCfg(c, 4), res, out, nil)
	sameFile(t, out, data)
	for x, rs := range byXorb(c) {
		if len(rs) > 1 {
			t.Fatalf("xorb %s: %d ranges without a footer, want the term whole", x, len(rs))
		}
	}
	if st.FetchedTerms != int64(len(data)) || c.footers != splitParts {
		t.Fatalf("no footer: %+v, %d footer asks", st, c.footers)
	}
}

// A range that fails is asked for again alone, and a range cut mid-body goes on from the record
// the cut fell in: no range received is fetched again.
func TestSplitRetriesPerRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*rangeCAS)
	}{{"fails", func(c *rangeCAS) { c.failAt = 3 }}, {"cut", func(c *rangeCAS) { c.cutAt = 3 }}} {
		t.Run(tc.name, func(t *testing.T) {
			c, data, res := termsFixture(t)
			tc.set(c)
			out := filepath.Join(t.TempDir(), "out")
			st := getCfg(t, splitCfg(c, 1), res, out, nil)
			sameFile(t, out, data)
			again := c.ranges[3]
			first := c.ranges[2]
			var onWire int64
			for _, r := range c.ranges {
				onWire += int64(r.Len())
			}
			// onWire becomes the bytes received: of the third request nothing, or its first half.
			half := uint64(first.Len() / 2)
			switch tc.name {
			case "fails":
				if again != first {
					t.Fatalf("after the failed range %s came %s", first.Header(), again.Header())
				}
				onWire -= int64(first.Len())
			case "cut":
				// The rest starts at the record the cut fell in (a record is at most 128 KiB and
				// its header).
				if again.End != first.End || again.Start+(128<<10+8) < first.Start+half || again.Start > first.Start+half {
					t.Fatalf("after the range %s cut half-way came %s, want its rest from the record cut", first.Header(), again.Header())
				}
				onWire -= int64(uint64(first.Len()) - half)
			}
			// Received twice: at most the part of the record the cut fell in.
			if twice := onWire - (st.Fetched - st.Footers); twice < 0 || twice > 128<<10+8 || st.FetchedTerms != int64(len(data)) {
				t.Fatalf("%d bytes of ranges received, %+v", onWire, st)
			}
		})
	}
}

// fairCAS sends every fetched body through one fair link.
type fairCAS struct {
	cas.Client
	link *fairLink
}

func (c *fairCAS) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	rc, err := c.Client.Fetch(ctx, x, f, r)
	if err != nil {
		return nil, err
	}
	return c.link.add(rc), nil
}

// fairLink shares one link among the bodies open on it, as the connections of one bottleneck
// progress together: a body reads its next quantum only while it is at most a quantum ahead of
// the open body that has read the least (a body joins at that least position). A body is open
// until it is closed, after its job wrote what it read: so the order in which bytes are written
// follows from the ranges' sizes and the order they start in, not from how the goroutines run.
type fairLink struct {
	mu   sync.Mutex
	cond *sync.Cond
	open map[*fairBody]bool
}

type fairBody struct {
	rc io.ReadCloser
	l  *fairLink
	v  int64 // the link's least position when it opened, plus the bytes read since
}

const fairQuantum = 16 << 10

func newFairLink() *fairLink {
	l := &fairLink{open: make(map[*fairBody]bool)}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// least is the position of the open body behind all others (0 when none is open); under mu.
func (l *fairLink) least() int64 {
	first, m := true, int64(0)
	for b := range l.open {
		if first || b.v < m {
			first, m = false, b.v
		}
	}
	return m
}

func (l *fairLink) add(rc io.ReadCloser) *fairBody {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := &fairBody{rc: rc, l: l, v: l.least()}
	l.open[b] = true
	return b
}

func (b *fairBody) Read(p []byte) (int, error) {
	l := b.l
	l.mu.Lock()
	for l.open[b] && b.v > l.least()+fairQuantum {
		l.cond.Wait()
	}
	l.mu.Unlock()
	n, err := b.rc.Read(p[:min(len(p), fairQuantum)])
	l.mu.Lock()
	b.v += int64(n)
	l.cond.Broadcast()
	l.mu.Unlock()
	return n, err
}

func (b *fairBody) Close() error {
	b.l.mu.Lock()
	delete(b.l.open, b)
	b.l.cond.Broadcast()
	b.l.mu.Unlock()
	return b.rc.Close()
}

// A URL that refuses ranges inside its listed one: the first refused range of a term makes the
// term be fetched whole, once; the other ranges of it are not asked for.
func TestSplitURLRefusesSubranges(t *testing.T) {
	c, data, res := termsFixture(t)
	c.wholeOnly = true
	out := filepath.Join(t.TempDir(), "out")
	st := getCfg(t, splitCfg(c, 1), res, out, nil)
	sameFile(t, out, data)
	whole := 0
	for x, rs := range byXorb(c) {
		if len(rs) == 2 && rs[1].Len() > 2<<20 && rs[0].Start == rs[1].Start {
			whole++
		} else if len(rs) != 1 {
			t.Fatalf("xorb %s: ranges %v, want one refused and the term whole", x, rs)
		}
	}
	if whole != splitParts || st.FetchedTerms != int64(len(data)) {
		t.Fatalf("%d terms fetched whole after a refusal, want %d; %+v", whole, splitParts, st)
	}
}

// A footer without raw offsets (version 0) or with record offsets that are wrong: the terms are
// fetched whole, as the plan lists them, and the file verifies.
func TestSplitUnusableFooter(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*rangeCAS)
	}{{"v0", func(c *rangeCAS) { c.v0Footer = true }}, {"bad offsets", func(c *rangeCAS) { c.badOffsets = true }}} {
		t.Run(tc.name, func(t *testing.T) {
			c, data, res := termsFixture(t)
			tc.set(c)
			out := filepath.Join(t.TempDir(), "out")
			st := getCfg(t, splitCfg(c, 4), res, out, nil)
			sameFile(t, out, data)
			if st.FetchedTerms < int64(len(data)) || c.footers != splitParts {
				t.Fatalf("%s: %+v, %d footer reads", tc.name, st, c.footers)
			}
			if tc.name == "v0" && len(c.ranges) != splitParts+1 {
				t.Fatalf("v0 footers: ranges %v, want each term whole", c.ranges)
			}
		})
	}
}
