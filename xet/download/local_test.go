package download_test

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas/castest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// spans is a span.Local over a fixed list.
type spans []span.Span

func (s spans) Spans([]hash.Hash) []span.Span { return s }

// localFixture: v1 and v2 (v1 with three 64 KiB edits) stored in one CAS.
func localFixture(t *testing.T) (c *castest.Counting, v1, v2 []byte, r1, r2 *upload.FileResult) {
	t.Helper()
	c = castest.NewCounting(embeddedtest.New(t))
	v1 = testutil.RandomBytes(12<<20, 7)
	v2 = append([]byte(nil), v1...)
	for _, at := range []int{1 << 20, 5 << 20, 11 << 20} {
		copy(v2[at:], testutil.RandomBytes(64<<10, uint64(at)))
	}
	// Two sessions, as two pushes: v2's new chunks go to a xorb of their own.
	cfg := upload.Config{CAS: c, Policy: xorb.PolicyAuto, GlobalDedupe: true}
	r1 = uploadWith(t, cfg, v1)[0]
	r2 = uploadWith(t, cfg, v2)[0]
	return c, v1, v2, r1, r2
}

// get downloads res to path and returns the spans it reported (with Path set) and its figures.
func get(t *testing.T, c *castest.Counting, res *upload.FileResult, path string, loc span.Local, keep bool) (spans, download.Stats) {
	t.Helper()
	var got spans
	var mu sync.Mutex // OnTerm is called by the ranges' goroutines
	var st download.Stats
	sum := res.SHA256
	err := download.Download(context.Background(), download.Config{CAS: c}, download.Request{
		File: res.FileHash, SHA256: &sum, Size: res.Size, Path: path, PrivatePath: keep, Keep: keep,
		Local: loc, Stats: &st,
		OnTerm: func(s span.Span) { mu.Lock(); s.Path = path; got = append(got, s); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	return got, st
}

func sameFile(t *testing.T, path string, want []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(b) != sha256.Sum256(want) {
		t.Fatalf("%s: wrong bytes", path)
	}
}

// A new version whose unchanged chunks are in a local file fetches only its changed chunks; a
// local file changed on disk is never the source of a wrong byte.
func TestDeltaFromLocalFile(t *testing.T) {
	c, v1, v2, r1, r2 := localFixture(t)
	dir := t.TempDir()
	p1 := filepath.Join(dir, "v1")
	sp1, st := get(t, c, r1, p1, nil, false)
	sameFile(t, p1, v1)
	if st.Local != 0 || st.FetchedTerms != int64(len(v1)) {
		t.Fatalf("full download: %+v", st)
	}
	p2 := filepath.Join(dir, "v2")
	_, st = get(t, c, r2, p2, sp1, false)
	sameFile(t, p2, v2)
	if st.Local+st.FetchedTerms != int64(len(v2)) || st.Fetched > int64(len(v2))/20 {
		t.Fatalf("delta download fetched %d of %d bytes (local %d)", st.FetchedTerms, len(v2), st.Local)
	}
	t.Logf("delta: fetched %d bytes (%d on the wire), %d local", st.FetchedTerms, st.Fetched, st.Local)

	// Flip a byte of the local copy: the term holding it is fetched, the result is right.
	b, _ := os.ReadFile(p1)
	b[8<<20] ^= 1
	if err := os.WriteFile(p1, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p3 := filepath.Join(dir, "v2b")
	_, st = get(t, c, r2, p3, sp1, false)
	sameFile(t, p3, v2)
	if st.LocalStale == 0 {
		t.Fatalf("a changed local file was not noticed: %+v", st)
	}
	// The local file gone: everything is fetched.
	os.Remove(p1)
	_, st = get(t, c, r2, filepath.Join(dir, "v2c"), sp1, false)
	if st.FetchedTerms != int64(len(v2)) {
		t.Fatalf("local file gone: %+v", st)
	}
}

// An interrupted download resumes: terms verified in place are kept (not written again), the rest
// fetched; damaged bytes in the kept part are fetched again.
func TestResumeInPlace(t *testing.T) {
	c, _, v2, _, r2 := localFixture(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	sp, _ := get(t, c, r2, full, nil, false)
	// A partial file: the first half of the terms written, the rest zero.
	p := filepath.Join(dir, "part")
	b := append([]byte(nil), v2...)
	sort.Slice(sp, func(a, b int) bool { return sp[a].Pos < sp[b].Pos })
	half := sp[:len(sp)/2]
	end := half[len(half)-1].Pos + half[len(half)-1].Bytes()
	clear(b[end:])
	b[10] ^= 0xff // damage inside the first term
	if err := os.WriteFile(p, b[:end+4096], 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range half {
		half[i].Path = p
	}
	_, st := get(t, c, r2, p, half, true)
	sameFile(t, p, v2)
	if st.InPlace == 0 || st.InPlace+st.FetchedTerms != int64(len(v2)) || st.LocalStale != 1 || st.Local != 0 {
		t.Fatalf("resume: %+v (kept part %d bytes)", st, end)
	}
}

// A local record that is wrong although each chunk hashes right (two chunks swapped, in the file
// and in the record) is caught by the file hash, and the file is fetched again without it.
func TestWrongLocalRecordFetchesAgain(t *testing.T) {
	c, v1, _, r1, _ := localFixture(t)
	dir := t.TempDir()
	sp, _ := get(t, c, r1, filepath.Join(dir, "v1"), nil, false)
	sort.Slice(sp, func(a, b int) bool { return sp[a].Pos < sp[b].Pos })
	s := sp[0]
	e0, e1 := s.Chunks[0], s.Chunks[1]
	n0, n1 := int(e0.Size), int(e1.Size)
	b := append([]byte(nil), v1...)
	swapped := append(append([]byte(nil), v1[n0:n0+n1]...), v1[:n0]...)
	copy(b, swapped)
	p := filepath.Join(dir, "swapped")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s.Path = p
	s.Chunks = append([]hash.Entry{e1, e0}, s.Chunks[2:]...)
	out := filepath.Join(dir, "out")
	_, st := get(t, c, r1, out, spans{s}, false)
	sameFile(t, out, v1)
	if st.Local != 0 || st.FetchedTerms != int64(len(v1)) {
		t.Fatalf("after the wrong local record: %+v", st)
	}
}

// A download interrupted inside a term resumes from its last reported part: the parts are
// checked in place and only the rest of the term is fetched.
func TestResumeInsideATerm(t *testing.T) {
	c := castest.NewCounting(embeddedtest.New(t))
	data := testutil.RandomBytes(40<<20, 9) // one xorb, one term
	res := uploadAll(t, c, data)[0]
	path := filepath.Join(t.TempDir(), "part")
	sum := res.SHA256
	ctx, cancel := context.WithCancel(context.Background())
	var parts spans
	err := download.Download(ctx, download.Config{CAS: c, Concurrency: 1}, download.Request{
		File: res.FileHash, SHA256: &sum, Size: res.Size, Path: path, PrivatePath: true, Keep: true,
		OnPart: func(s span.Span) {
			s.Path = path
			parts = append(parts, s)
			if len(parts) == 2 {
				cancel()
			}
		}})
	if err == nil || len(parts) != 2 || parts[1].XorbEnd == 0 {
		t.Fatalf("interrupted download: %v, %d parts", err, len(parts))
	}
	kept := parts[1].Pos + parts[1].Bytes()
	var st download.Stats
	err = download.Download(context.Background(), download.Config{CAS: c}, download.Request{
		File: res.FileHash, SHA256: &sum, Size: res.Size, Path: path, PrivatePath: true, Keep: true,
		Local: parts, Stats: &st})
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, path, data)
	if st.InPlace != kept || st.FetchedTerms != int64(len(data))-kept || st.Fetched > int64(len(data))-kept+64<<10 {
		t.Fatalf("resumed after %d bytes: %+v", kept, st)
	}
}
