package upload_test

import (
	"fmt"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// seg is a piece of a test file: n chunks already stored (a dedupe match that does not continue
// the previous term), or n new chunks.
type seg struct {
	dedupe bool
	n      int
}

// defragModel applies the defragmentation rule of xet-core (xet-formats.md §6) to a file made of
// segs and returns the number of terms of the file and of chunks deduped:
//   - a window of the chunk counts of the last 128 ranges (terms); no estimate (dedupe allowed)
//     until it holds 128;
//   - cpr = the window's average; target 4 while the low threshold is on (initially), 8 otherwise;
//   - cpr < target and match shorter than cpr: refused (its chunks are stored as new data) and the
//     threshold goes high; cpr >= target: allowed and the threshold goes low;
//   - new data extends the last range when it follows new data, otherwise starts a range of 1.
func defragModel(segs []seg) (terms, deduped int) {
	const window = 128
	var ranges []int
	sum, low, lastNew := 0, true, false
	add := func(k int) {
		ranges = append(ranges, k)
		sum += k
		if len(ranges) > window {
			sum -= ranges[0]
			ranges = ranges[1:]
		}
		terms++
	}
	for _, s := range segs {
		if s.dedupe {
			allow := true
			if len(ranges) >= window {
				cpr := float64(sum) / float64(len(ranges))
				target := 8.0
				if low {
					target = 4.0
				}
				if cpr < target {
					if float64(s.n) < cpr {
						low, allow = false, false
					}
				} else {
					low = true
				}
			}
			if allow {
				add(s.n)
				deduped += s.n
				lastNew = false
				continue
			}
		}
		for range s.n {
			if lastNew {
				ranges[len(ranges)-1]++
				sum++
			} else {
				add(1)
				lastNew = true
			}
		}
	}
	return terms, deduped
}

// buildDefragFile returns a base file and a file made of segs repeated cycles times, whose dedupe
// segments are runs of the base's chunks separated by one unused chunk (so that no match continues
// the previous one) and whose new segments are fresh chunks.
func buildDefragFile(t *testing.T, pattern []seg, cycles int, seed uint64) (base, file []byte, segs []seg) {
	baseN := 0
	for range cycles {
		for _, s := range pattern {
			if s.dedupe {
				baseN += s.n + 1
			}
		}
	}
	bb := blocks(baseN, seed)
	next, fresh := 0, seed+1<<32
	var parts [][]byte
	for range cycles {
		for _, s := range pattern {
			segs = append(segs, s)
			if s.dedupe {
				parts = append(parts, bb[next:next+s.n]...)
				next += s.n + 1
				continue
			}
			parts = append(parts, blocks(s.n, fresh)...)
			fresh += uint64(s.n)
		}
	}
	return join(t, bb...), join(t, parts...), segs
}

// A file whose chunks alternate between stored and new ones in tiny runs is not shredded into a
// term per run: once 128 ranges are known, short matches are refused as xet-core refuses them.
func TestDefragmentationRule(t *testing.T) {
	cases := []struct {
		name    string
		pattern []seg
		cycles  int
	}{
		// cpr 2 after 64 cycles: 1-chunk matches refused until cpr reaches 8 (cycle 256), allowed
		// again until the big range leaves the window (cycle 320), refused again after.
		{"1 stored, 3 new", []seg{{true, 1}, {false, 3}}, 330},
		// cpr 1: a 1-chunk match is not shorter than cpr, so it is always allowed.
		{"1 stored, 1 new", []seg{{true, 1}, {false, 1}}, 100},
		{"mixed", []seg{{true, 2}, {false, 1}, {true, 1}, {false, 2}, {true, 3}, {false, 1}}, 70},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base, file, segs := buildDefragFile(t, tc.pattern, tc.cycles, uint64(i+1)<<20)
			wantTerms, wantDeduped := defragModel(segs)
			naive := len(segs)
			local := embeddedtest.New(t)
			cc := &recCAS{inner: local}
			res := uploadFiles(t, upload.Config{CAS: cc, Policy: policyNone}, base, file)
			r := res[1]
			terms := fileTerms(t, cc.lastShard(t), r.FileHash)
			var size uint64
			for _, tm := range terms {
				size += uint64(tm.UnpackedBytes)
			}
			if size != uint64(len(file)) {
				t.Fatalf("terms cover %d bytes, file has %d", size, len(file))
			}
			if r.DedupedBytes != int64(wantDeduped*blockSize) || r.NewBytes != int64(len(file))-r.DedupedBytes {
				t.Fatalf("deduped %d bytes (%d chunks), new %d; the rule dedupes %d chunks",
					r.DedupedBytes, r.DedupedBytes/blockSize, r.NewBytes, wantDeduped)
			}
			if len(terms) != wantTerms {
				t.Fatalf("%d terms, the rule gives %d (%d without it)", len(terms), wantTerms, naive)
			}
			t.Logf("%d segments: %d terms (%d chunks deduped)", naive, wantTerms, wantDeduped)
			downloadEq(t, local, r, file)
		})
	}
	// The model itself must refuse in the first case, or the test shows nothing.
	_, file, segs := buildDefragFile(t, cases[0].pattern, cases[0].cycles, 99)
	if terms, _ := defragModel(segs); terms >= len(segs)*3/4 || len(file) == 0 {
		t.Fatalf("model: %d terms for %d segments: the rule did not apply", terms, len(segs))
	}
}

// Adjacent chunks of one xorb form one term; a gap, or new data in between, starts another.
func TestAdjacentChunksFormOneTerm(t *testing.T) {
	b := blocks(30, 777)
	fresh := blocks(6, 888)
	cat := func(parts ...[][]byte) []byte {
		var all [][]byte
		for _, p := range parts {
			all = append(all, p...)
		}
		return join(t, all...)
	}
	files := []struct {
		name  string
		data  []byte
		spans []int // chunk count of each term
	}{
		{"base", cat(b), []int{30}},
		{"two runs with a gap", cat(b[0:10], b[20:30]), []int{10, 10}},
		{"inner run", cat(b[3:25]), []int{22}},
		{"new data", cat(fresh[0:3]), []int{3}},
		{"stored, new, stored", cat(b[0:5], fresh[3:6], b[5:10]), []int{5, 3, 5}},
	}
	var data [][]byte
	for _, f := range files {
		data = append(data, f.data)
	}
	local := embeddedtest.New(t)
	cc := &recCAS{inner: local}
	res := uploadFiles(t, upload.Config{CAS: cc, Policy: policyNone}, data...)
	sh := cc.lastShard(t)
	baseXorb := fileTerms(t, sh, res[0].FileHash)[0]
	for i, f := range files {
		terms := fileTerms(t, sh, res[i].FileHash)
		var spans []int
		for _, tm := range terms {
			spans = append(spans, int(tm.ChunkEnd-tm.ChunkStart))
		}
		if fmt.Sprint(spans) != fmt.Sprint(f.spans) {
			t.Errorf("%s: terms of %v chunks, want %v", f.name, spans, f.spans)
		}
		downloadEq(t, local, res[i], f.data)
	}
	gap := fileTerms(t, sh, res[1].FileHash)
	if len(gap) == 2 && (gap[0].Xorb != baseXorb.Xorb || gap[1].Xorb != baseXorb.Xorb ||
		gap[1].ChunkStart != gap[0].ChunkStart+20) {
		t.Errorf("two runs of the base: terms %+v, base %+v", gap, baseXorb)
	}
}

// Small files of one session share xorbs: one xorb holds them all when they fit.
func TestSmallFilesShareXorbs(t *testing.T) {
	var files [][]byte
	for i := range 12 {
		files = append(files, testutil.RandomBytes(20<<10+i*7000, uint64(50+i)))
	}
	local := embeddedtest.New(t)
	cc := &recCAS{inner: local}
	res := uploadFiles(t, upload.Config{CAS: cc}, files...)
	_, x, s := cc.counts()
	if x != 1 || s != 1 {
		t.Fatalf("%d files of %d KiB at most: %d xorbs and %d shards uploaded, want 1 and 1", len(files), (20<<10+11*7000)>>10, x, s)
	}
	sh := cc.lastShard(t)
	if len(sh.Xorbs) != 1 || len(sh.Files) != len(files) {
		t.Fatalf("shard has %d xorbs and %d files", len(sh.Xorbs), len(sh.Files))
	}
	for i, r := range res {
		for _, tm := range fileTerms(t, sh, r.FileHash) {
			if tm.Xorb != sh.Xorbs[0].Hash {
				t.Fatalf("file %d names xorb %s, not the shared one", i, tm.Xorb)
			}
		}
		downloadEq(t, local, r, files[i])
	}
}

// With SeparateFiles the same files get xorbs of their own (one each here: none reaches a xorb's
// limit), still in one shard, and each downloads.
func TestSeparateFilesKeepTheirXorbs(t *testing.T) {
	var files [][]byte
	for i := range 6 {
		files = append(files, testutil.RandomBytes(20<<10+i*7000, uint64(60+i)))
	}
	local := embeddedtest.New(t)
	cc := &recCAS{inner: local}
	res := uploadFiles(t, upload.Config{CAS: cc, SeparateFiles: true}, files...)
	_, x, s := cc.counts()
	if x != len(files) || s != 1 {
		t.Fatalf("%d files: %d xorbs and %d shards uploaded, want %d and 1", len(files), x, s, len(files))
	}
	sh := cc.lastShard(t)
	seen := map[string]bool{}
	for i, r := range res {
		for _, tm := range fileTerms(t, sh, r.FileHash) {
			if seen[tm.Xorb.String()] {
				t.Fatalf("file %d names xorb %s, another file's", i, tm.Xorb)
			}
			seen[tm.Xorb.String()] = true
		}
		downloadEq(t, local, r, files[i])
	}
}
