package test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
)

// The history `log` is tested on: logN versions of a logSize random file, each the one before with
// logEdits blocks of 64 KiB rewritten at seeded places (0.5 % of the file, test/versions.sh's
// edit), one commit and one push each.
const (
	logSize  = 64 << 20
	logN     = 10
	logEdits = 5
	logBlock = 64 << 10
)

// editVersion turns b (version i-1) into version i.
func editVersion(b []byte, i int) {
	at := testutil.RandomBytes(8*logEdits, uint64(9000+i))
	for k := 0; k < logEdits; k++ {
		off := int(binary.LittleEndian.Uint64(at[8*k:]) % uint64(len(b)-logBlock))
		copy(b[off:], testutil.RandomBytes(logBlock, uint64(9000+100*i+k)))
	}
}

// logExpect is what a version shares with the one before, counted chunk by chunk over the bytes
// (content-defined chunks, as the upload cuts them): shared, the bytes of its chunks the previous
// version has; fresh, the bytes of its distinct chunks the previous version lacks.
type logExpect struct{ shared, fresh int64 }

var (
	logExpectOnce sync.Once
	logExpected   []logExpect // by version - 1
)

// expectations chunks the logN versions (once per test binary) and counts what each shares.
func expectations(t *testing.T) []logExpect {
	logExpectOnce.Do(func() {
		b := testutil.RandomBytes(logSize, 8999)
		var prev map[hash.Hash]bool
		for i := 1; i <= logN; i++ {
			if i > 1 {
				editVersion(b, i)
			}
			s, err := chunk.Summarize(bytes.NewReader(b))
			if err != nil {
				panic(err)
			}
			var e logExpect
			cur, counted := map[hash.Hash]bool{}, map[hash.Hash]bool{}
			for _, c := range s.Chunks {
				cur[c.Hash] = true
				switch {
				case prev[c.Hash]:
					e.shared += int64(c.Size)
				case !counted[c.Hash]:
					counted[c.Hash] = true
					e.fresh += int64(c.Size)
				}
			}
			logExpected = append(logExpected, e)
			prev = cur
		}
	})
	return logExpected
}

// logRecord is a record of `log --json`, read as a user's script would.
type logRecord struct {
	Commit, Path, Oid, State, Error string
	PrevOid                         string   `json:"previous_oid"`
	PrevState                       string   `json:"previous_state"`
	PrevByContent                   bool     `json:"previous_by_content"`
	Size                            int64    `json:"size"`
	Shared                          *int64   `json:"shared_bytes"`
	New                             *int64   `json:"new_bytes"`
	Saved                           *float64 `json:"saved"`
	Exact                           bool     `json:"exact"`
}

// logJSON runs `git xet-transfer log --json ARGS…` in dir and parses its answer; it returns how
// long the command took.
func logJSON(t *testing.T, e *env, dir string, args ...string) ([]logRecord, time.Duration) {
	t.Helper()
	var out, errb bytes.Buffer
	c := e.cmd(dir, "git", append([]string{"xet-transfer", "log", "--json"}, args...)...)
	c.Stdout, c.Stderr = &out, &errb
	start := time.Now()
	if err := c.Run(); err != nil {
		t.Fatalf("git xet-transfer log --json %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	took := time.Since(start)
	var recs []logRecord
	if err := json.Unmarshal(out.Bytes(), &recs); err != nil {
		t.Fatalf("log --json printed no JSON array: %v\n%s", err, out.String())
	}
	return recs, took
}

// logRemoteKind is a kind of remote for the log test: a world with the agent installed, a work
// tree pushing to the remote, the remote, another user's world (a HOME of its own, no shard cache)
// and, for a server, its request counts by route.
type logRemoteKind struct {
	name  string
	setup func(t *testing.T) (e *env, work, remote string, other func() *env, m *server.Metrics)
}

var logRemoteKinds = []logRemoteKind{
	{"embedded", func(t *testing.T) (*env, string, string, func() *env, *server.Metrics) {
		e := newEnv(t)
		e.install()
		work, remote := e.localRepo(repoOpts{})
		return e, work, remote, func() *env { o := newEnv(t); o.install(); return o }, nil
	}},
	{"server", func(t *testing.T) (*env, string, string, func() *env, *server.Metrics) {
		e := newEnv(t)
		e.install()
		m := server.NewMetrics()
		s := startServer(t, "", func(c *server.Config) { c.Metrics = m })
		work, remote := batchRepo(t, e, s.url+"/team/log.git/info/lfs")
		return e, work, remote, func() *env { o := newEnv(t); o.install(); return o }, m
	}},
	{"hub", func(t *testing.T) (*env, string, string, func() *env, *server.Metrics) {
		m := server.NewMetrics()
		h := startHub(t, time.Hour, func(c *server.Config) { c.Metrics = m })
		user := func() *env {
			e := hubEnv(t, h)
			e.vars = append(e.vars, "HF_TOKEN="+hubWriteToken)
			return e
		}
		e := user()
		work, remote := hubRepo(t, e, h, "org/log")
		return e, work, remote, user, m
	}},
}

// routeCounts reads the server's request counts by route template (all methods and codes), and
// the reconstructions it served under the key "reconstructions".
func routeCounts(t *testing.T, m *server.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := map[string]float64{}
	route := regexp.MustCompile(`^xet_http_requests_total\{.*route="([^"]*)".*\} (\S+)$`)
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		l := sc.Text()
		if g := route.FindStringSubmatch(l); g != nil {
			v, _ := strconv.ParseFloat(g[2], 64)
			out[g[1]] += v
		}
		if strings.HasPrefix(l, "xet_reconstructions_total{") {
			v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			out["reconstructions"] += v
		}
	}
	return out
}

// `git xet-transfer log` over 10 versions of a 64 MiB file, each editing 0.5 % of it, pushed to
// the embedded store, xet-server and the Hub emulator: every version's shared and new bytes are
// what a chunk-by-chunk count of the versions gives (within a chunk), exact; from plans alone,
// with no xorb fetched (the server's request counts; for the embedded store, the bytes read from
// it); --json and the table; a path limit, a revision range, a commit not pushed.
func TestLogVersions(t *testing.T) {
	want := expectations(t)
	for _, k := range logRemoteKinds {
		t.Run(k.name, func(t *testing.T) {
			e, work, remote, other, m := k.setup(t)
			oids, last := commitLogVersions(t, e, work)
			var before map[string]float64
			if m != nil {
				before = routeCounts(t, m)
			}
			recs, took := logJSON(t, e, work, "--", "model.bin")
			t.Logf("log --json of %d versions of %d MiB: %v", logN, logSize>>20, took)
			if m != nil {
				after := routeCounts(t, m)
				checkNoDataFetched(t, before, after)
				if n := after["reconstructions"] - before["reconstructions"]; n != logN {
					t.Errorf("the log asked %v plans, want %d (each version's once)", n, logN)
				}
			} else {
				checkStoreReads(t, e, work, filepath.Join(remote, "xet"))
			}
			checkLogRecords(t, e, work, recs, oids, want)
			checkLogTable(t, e, work)
			checkLogFilters(t, e, work, recs)
			checkLogElsewhere(t, other(), remote, recs)
			checkLogRenamed(t, e, work, last, oids[logN-1])
			checkLogUnpushed(t, e, work)
		})
	}
}

// checkLogElsewhere: another user's clone, whose shard cache knows none of the xorbs, gets the
// same records from the plans alone (chunk sizes from the terms of all the versions' plans).
func checkLogElsewhere(t *testing.T, o *env, remote string, want []logRecord) {
	t.Helper()
	clone := filepath.Join(o.home, "clone")
	o.vars = append(o.vars, "GIT_LFS_SKIP_SMUDGE=1") // no download: the log needs none
	o.git("", "clone", "-q", remote, clone)
	got, _ := logJSON(t, o, clone, "--", "model.bin")
	if fmt.Sprint(values(got)) != fmt.Sprint(values(want)) {
		t.Errorf("in a clone without the shard cache:\n%v\nwant what the pushing repository's log gives:\n%v", values(got), values(want))
	}
}

// values renders records with their byte counts, not the counts' addresses.
func values(recs []logRecord) []string {
	var out []string
	for _, r := range recs {
		b, _ := json.Marshal(r)
		out = append(out, string(b))
	}
	return out
}

// commitLogVersions commits and pushes the versions as model.bin (with other.bin, a second LFS
// file changed once, and a plain file) and returns model.bin's oids, oldest first, and its last
// version.
func commitLogVersions(t *testing.T, e *env, work string) ([]string, []byte) {
	t.Helper()
	b := testutil.RandomBytes(logSize, 8999)
	other := testutil.RandomBytes(1<<20, 77)
	var oids []string
	for i := 1; i <= logN; i++ {
		if i > 1 {
			editVersion(b, i)
		}
		writeFile(t, filepath.Join(work, "model.bin"), b)
		switch i {
		case 1:
			writeFile(t, filepath.Join(work, "other.bin"), other)
			writeFile(t, filepath.Join(work, "notes.txt"), []byte("not an LFS file\n"))
		case 5:
			copy(other[1<<19:], testutil.RandomBytes(1<<19, 78))
			writeFile(t, filepath.Join(work, "other.bin"), other)
			writeFile(t, filepath.Join(work, "notes.txt"), []byte("still not an LFS file\n"))
		}
		oids = append(oids, oidOf(b))
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", fmt.Sprintf("version %d", i))
		e.git(work, "push", "-q", "origin", "main")
	}
	return oids, b
}

// checkLogRenamed: model.bin renamed to renamed.bin as it changes once more (git sees a deletion
// and an addition: the pointers differ) is measured against model.bin's last version.
func checkLogRenamed(t *testing.T, e *env, work string, last []byte, lastOid string) {
	t.Helper()
	editVersion(last, logN+1)
	e.git(work, "rm", "-q", "model.bin")
	writeFile(t, filepath.Join(work, "renamed.bin"), last)
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "renamed as it changed")
	e.git(work, "push", "-q", "origin", "main")
	recs, _ := logJSON(t, e, work, "HEAD~1..HEAD")
	if len(recs) != 1 || recs[0].Path != "renamed.bin" || recs[0].PrevOid != lastOid || !recs[0].PrevByContent || recs[0].Saved == nil || *recs[0].Saved < 0.98 {
		t.Errorf("renamed.bin, added as model.bin was deleted: %v, want model.bin's last version as its previous one, 98 %% saved or more", values(recs))
	}
}

// checkNoDataFetched: between the counts before and after, no xorb, chunk or bridge request.
func checkNoDataFetched(t *testing.T, before, after map[string]float64) {
	t.Helper()
	xorbRoutes := 0
	for route := range before {
		if strings.Contains(route, "/xorbs/") {
			xorbRoutes++
		}
	}
	if xorbRoutes == 0 { // the pushes stored xorbs: a count that names none could not see a fetch
		t.Fatalf("the server's request counts name no xorb route: %v", before)
	}
	for route, n := range after {
		if d := n - before[route]; d > 0 && (strings.Contains(route, "/xorbs/") || strings.Contains(route, "/chunks/") ||
			strings.Contains(route, "bridge") || strings.Contains(route, "cdn")) {
			t.Errorf("the log made %v requests of %s: it must not fetch data", d, route)
		}
	}
}

// checkLogRecords checks model.bin's records against the chunk-by-chunk count.
func checkLogRecords(t *testing.T, e *env, work string, recs []logRecord, oids []string, want []logExpect) {
	t.Helper()
	if len(recs) != logN {
		t.Fatalf("%d records for model.bin, want %d: %+v", len(recs), logN, recs)
	}
	for k, r := range recs { // newest first
		v := logN - k
		if r.Commit != e.git(work, "rev-parse", fmt.Sprintf("HEAD~%d", k))[:len(r.Commit)] || len(r.Commit) < 40 {
			t.Errorf("record %d names commit %q, want HEAD~%d's full hash", k, r.Commit, k)
		}
		if r.State != "xet" || r.Shared == nil || r.New == nil || r.Saved == nil || r.Size != logSize || r.Oid != oids[v-1] {
			t.Fatalf("version %d: %+v, want a Xet file of %d bytes with byte counts", v, r, logSize)
		}
		w := want[v-1]
		t.Logf("version %d: shared %d new %d saved %.2f %% (chunk count: shared %d new %d) exact %v", v, *r.Shared, *r.New,
			100**r.Saved, w.shared, w.fresh, r.Exact)
		// Tolerance: one 64 KiB chunk either way. The CAS's chunks are the upload's, cut by the same
		// chunker as the count; a chunk the upload stored again instead of deduplicating would show.
		if abs(*r.Shared-w.shared) > 64<<10 || abs(*r.New-w.fresh) > 64<<10 || !r.Exact {
			t.Errorf("version %d: shared %d, new %d (exact %v); the chunk count says %d and %d", v, *r.Shared, *r.New, r.Exact, w.shared, w.fresh)
		}
		if saved := 1 - float64(*r.New)/logSize; abs64(*r.Saved-saved) > 1e-9 || (v > 1 && saved < 0.98) || (v == 1 && *r.Saved != 0) {
			t.Errorf("version %d: saved %v; want 1 - new/size, and at least 98 %% for an edit of 0.5 %%", v, *r.Saved)
		}
		if (v == 1) != (r.PrevOid == "") || (v > 1 && (r.PrevOid != oids[v-2] || r.PrevState != "xet")) {
			t.Errorf("version %d: previous %q (%s), want version %d's", v, r.PrevOid, r.PrevState, v-1)
		}
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func abs64(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// checkLogTable: the table has a header and a row per version, its columns aligned, with human
// sizes and shares.
func checkLogTable(t *testing.T, e *env, work string) {
	t.Helper()
	out := e.git(work, "xet-transfer", "log", "--", "model.bin")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != logN+1 {
		t.Fatalf("the table has %d lines, want a header and %d rows:\n%s", len(lines), logN, out)
	}
	head := lines[0]
	cell := regexp.MustCompile(`^(\d+(\.\d)? (B|KiB|MiB)|\d+\.\d %)`)
	for _, col := range []string{"SIZE", "SHARED", "NEW", "SAVED"} {
		at := strings.Index(head, col)
		for _, l := range lines[1:] {
			if at <= 0 || len(l) <= at || l[at-1] != ' ' || !cell.MatchString(l[at:]) {
				t.Fatalf("column %s (at %d) is not aligned, or not a human size or share, in\n%s", col, at, out)
			}
		}
	}
	if !strings.Contains(lines[logN], "64.0 MiB") || !strings.Contains(lines[logN], "new path") || !strings.Contains(lines[1], "%") {
		t.Errorf("the table's rows do not read as expected:\n%s", out)
	}
}

// checkLogFilters: a path limit lists that path only; a revision range lists its commits, each
// still measured against the version before it (outside the range for the oldest).
func checkLogFilters(t *testing.T, e *env, work string, all []logRecord) {
	t.Helper()
	other, _ := logJSON(t, e, work, "--", "other.bin")
	if len(other) != 2 || other[0].Path != "other.bin" || other[1].PrevOid != "" || other[0].PrevOid != other[1].Oid {
		t.Fatalf("log -- other.bin: %+v, want its two versions", other)
	}
	if *other[0].New > 600<<10 || *other[0].Shared < 400<<10 {
		t.Errorf("other.bin's second version (half of 1 MiB rewritten): shared %d, new %d", *other[0].Shared, *other[0].New)
	}
	rng, _ := logJSON(t, e, work, "HEAD~3..HEAD~1", "--", "model.bin")
	if fmt.Sprint(values(rng)) != fmt.Sprint(values(all[1:3])) {
		t.Errorf("log HEAD~3..HEAD~1 -- model.bin:\n%v\nwant the records of HEAD~1 and HEAD~2:\n%v", values(rng), values(all[1:3]))
	}
	both, _ := logJSON(t, e, work)
	if len(both) != logN+2 {
		t.Errorf("log with no limit: %d records, want %d (model.bin's and other.bin's; notes.txt is no LFS file)", len(both), logN+2)
	}
}

// checkLogUnpushed: a version committed and not pushed is a row saying so, not a failure.
func checkLogUnpushed(t *testing.T, e *env, work string) {
	t.Helper()
	writeFile(t, filepath.Join(work, "renamed.bin"), testutil.RandomBytes(4096, 5))
	e.git(work, "commit", "-q", "-am", "not pushed")
	recs, _ := logJSON(t, e, work, "HEAD~1..HEAD")
	if len(recs) != 1 || recs[0].State != "missing" || recs[0].Shared != nil || recs[0].PrevState != "xet" {
		t.Errorf("a commit not pushed: %+v, want one record in state missing, without byte counts", recs)
	}
	if out := e.git(work, "xet-transfer", "log", "HEAD~1..HEAD"); !strings.Contains(out, "not on the remote") {
		t.Errorf("the table does not say the version is not on the remote:\n%s", out)
	}
}

// checkStoreReads runs the log under strace and sums the bytes it read from files of the embedded
// store: its file records and the footers of the xorbs (which the store reads to plan), not their
// data. strace is installed by .ci/run; without it (outside CI) the count is skipped.
func checkStoreReads(t *testing.T, e *env, work, store string) {
	t.Helper()
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace is missing (required under CI=true: .ci/run installs it)")
		}
		t.Log("strace is missing: the bytes read from the embedded store are not counted")
		return
	}
	trace := filepath.Join(t.TempDir(), "trace")
	c := e.cmd(work, "strace", "-f", "-y", "-qq", "-o", trace, "-e", "trace=read,pread64,readv,preadv,preadv2",
		filepath.Join(binDir, "git-xet-transfer"), "log", "--json", "--", "model.bin")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("strace git-xet-transfer log: %v\n%.2000s", err, out)
	}
	n := bytesReadUnder(t, trace, store)
	stored := dirSize(t, store)
	t.Logf("the log read %d bytes of the embedded store's %d", n, stored)
	if n == 0 || n > 1<<20 {
		t.Errorf("the log read %d bytes of the embedded store (%d stored); want its records and xorb footers only (under 1 MiB)", n, stored)
	}
}

// bytesReadUnder sums the results of the read calls of an strace -f -y log on files under dir
// (a call interrupted by another thread's is "unfinished" on one line and "resumed" on a later
// one of its pid).
func bytesReadUnder(t *testing.T, trace, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`^(\d+)\s+\w+\(\d+<([^>]*)>`)
	result := regexp.MustCompile(`\) = (\d+)$`)
	resumed := regexp.MustCompile(`^(\d+)\s+<\.\.\. \w+ resumed>`)
	pending := map[string]string{} // pid -> path of its unfinished call
	var n int64
	for _, l := range strings.Split(string(b), "\n") {
		path := ""
		if g := call.FindStringSubmatch(l); g != nil {
			path = g[2]
			if strings.HasSuffix(l, "<unfinished ...>") {
				pending[g[1]] = path
				continue
			}
		} else if g := resumed.FindStringSubmatch(l); g != nil {
			path = pending[g[1]]
			delete(pending, g[1])
		}
		if r := result.FindStringSubmatch(l); r != nil && strings.HasPrefix(path, dir+string(filepath.Separator)) {
			v, _ := strconv.ParseInt(r[1], 10, 64)
			n += v
		}
	}
	return n
}
