//go:build !windows

package test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/summary"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// The summary line an interactive user sees after a push, a clone and a pull through the agent
// against xet-server (issue 45): one line per git-lfs run, on a row of its own, whose figures are
// the run's files, their size, and the bytes the server's metrics say crossed the network; none
// without a terminal, none with xet.summary=false.
func TestSummaryLine(t *testing.T) {
	needLinux(t)
	buildServer(t)
	metricsAddr := servertest.FreeAddr(t)
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--metrics-listen", metricsAddr)
	metrics := "http://" + metricsAddr + "/metrics"
	e := newEnv(t)
	e.install()
	work, remote := batchRepo(t, e, "http://"+s.addr+"/team/summary.git/info/lfs")

	a := testutil.RandomBytes(8<<20, 451)
	writeFile(t, filepath.Join(work, "a.bin"), a)
	writeFile(t, filepath.Join(work, "b.bin"), testutil.RandomBytes(3<<20, 452))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	before := metricValue(t, metrics, "xet_received_bytes_total")
	out := e.gitPTY(work, "push", "origin", "main")
	got := summaryOf(t, "push v1", out)
	wantHead(t, got, 2, 11<<20)
	sameBytes(t, "push v1: sent", got.moved, metricValue(t, metrics, "xet_received_bytes_total")-before)

	clone := filepath.Join(e.home, "clone")
	before = metricValue(t, metrics, "xet_sent_bytes_total")
	out = e.gitPTY("", "clone", remote, clone)
	got = summaryOf(t, "clone", out)
	wantHead(t, got, 2, 11<<20)
	sameBytes(t, "clone: received", got.moved, metricValue(t, metrics, "xet_sent_bytes_total")-before)

	// v2 of a.bin: 64 KiB rewritten in the middle. The push sends about that, and says the rest was
	// stored; the pull fetches about that, and says the rest was local.
	copy(a[4<<20:], testutil.RandomBytes(64<<10, 453))
	writeFile(t, filepath.Join(work, "a.bin"), a)
	e.git(work, "commit", "-q", "-am", "v2")
	before = metricValue(t, metrics, "xet_received_bytes_total")
	dedupedBefore := metricValue(t, metrics, "xet_deduplicated_bytes_total")
	out = e.gitPTY(work, "push", "origin", "main")
	got = summaryOf(t, "push v2", out)
	wantHead(t, got, 1, 8<<20)
	sameBytes(t, "push v2: sent", got.moved, metricValue(t, metrics, "xet_received_bytes_total")-before)
	// The share already stored is the server's count of the file's bytes held in xorbs stored
	// before its shard.
	deduped := metricValue(t, metrics, "xet_deduplicated_bytes_total") - dedupedBefore
	if want := summary.Percent(int64(deduped), 8<<20); !strings.Contains(got.line, "("+want+" already stored)") {
		t.Errorf("push v2: %q, while the server counted %.0f of %d bytes deduplicated (%s)", got.line, deduped, 8<<20, want)
	}
	if got.moved > 1<<20 || got.share < 90 {
		t.Errorf("push v2 of a 64 KiB change: %q, want under 1 MB sent and over 90 %% already stored", got.line)
	}

	before = metricValue(t, metrics, "xet_sent_bytes_total")
	out = e.gitPTY(clone, "pull", "origin", "main")
	got = summaryOf(t, "pull", out)
	wantHead(t, got, 1, 8<<20)
	sameBytes(t, "pull: received", got.moved, metricValue(t, metrics, "xet_sent_bytes_total")-before)
	if got.moved > 1<<20 || got.share < 90 {
		t.Errorf("pull of a 64 KiB change: %q, want under 1 MB received and over 90 %% already local", got.line)
	}
	if n := sameTree(t, work, clone); n < 2 {
		t.Fatalf("compared %d files after the pull, want a.bin and b.bin among them", n)
	}

	// The same push with no terminal (as in CI or a script): the agent had figures, and wrote them
	// nowhere, neither on git's output nor in git-lfs's trace.
	copy(a[1<<20:], testutil.RandomBytes(64<<10, 454))
	writeFile(t, filepath.Join(work, "a.bin"), a)
	e.git(work, "commit", "-q", "-am", "v3")
	c := e.cmd(work, "git", "push", "origin", "main")
	c.Env = append(c.Env, "GIT_TRACE=1")
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal, even under a developer's shell
	b, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("push v3 without a terminal: %v\n%s", err, b)
	}
	if bytes.Contains(b, []byte("xet: ")) {
		t.Errorf("push without a terminal printed a summary:\n%s", b)
	}
	if len(e.logLines("summary not shown", "no controlling terminal")) == 0 {
		t.Errorf("push without a terminal: no agent logged that it had a summary and no terminal")
	}

	// xet.summary=false: a terminal, and no line.
	copy(a[2<<20:], testutil.RandomBytes(64<<10, 455))
	writeFile(t, filepath.Join(work, "a.bin"), a)
	e.git(work, "commit", "-q", "-am", "v4")
	e.git(work, "config", "xet.summary", "false")
	if out := e.gitPTY(work, "push", "origin", "main"); strings.Contains(out, "xet: ") {
		t.Errorf("push with xet.summary=false printed a summary:\n%q", out)
	}
}

// A push to a local remote's embedded store uses no network: its line says what was stored new,
// and a clone's what was copied from the store.
func TestSummaryLineEmbedded(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	work, remote := e.localRepo(repoOpts{})
	a := testutil.RandomBytes(4<<20, 456)
	writeFile(t, filepath.Join(work, "a.bin"), a)
	writeFile(t, filepath.Join(work, "b.bin"), a[:2<<20]) // its chunks are a's first ones
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	got := summaryOf(t, "push", e.gitPTY(work, "push", "origin", "main"))
	wantHead(t, got, 2, 6<<20)
	if !strings.Contains(got.line, "; stored ") || got.moved > 4.5e6 || got.share < 25 {
		t.Errorf("push of 6 MiB holding 4 MiB of distinct data: %q, want about 4.2 MB stored new and over 25 %% already stored", got.line)
	}
	got = summaryOf(t, "clone", e.gitPTY("", "clone", remote, filepath.Join(e.home, "clone")))
	wantHead(t, got, 2, 6<<20)
	if !strings.Contains(got.line, "from the store") {
		t.Errorf("clone from a local remote: %q, want what was copied from the store", got.line)
	}
}

// gitPTY runs git in dir on a new pseudo-terminal that is its controlling terminal (stdin, stdout
// and stderr), as an interactive user's is, and returns what it wrote there.
func (e *env) gitPTY(dir string, args ...string) string {
	e.t.Helper()
	c := e.cmd(dir, "git", args...)
	c.Env = append(c.Env, "TERM=xterm")
	ptmx, err := pty.StartWithSize(c, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		e.t.Fatal(err)
	}
	defer ptmx.Close()
	var out bytes.Buffer
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(&out, ptmx); copied <- err }()
	werr := c.Wait()
	// The terminal's output ends (EIO) once no process holds its other side.
	select {
	case err := <-copied:
		var pe *os.PathError
		if err != nil && !(errors.As(err, &pe) && errors.Is(pe.Err, syscall.EIO)) {
			e.t.Fatalf("reading the terminal of git %s: %v", strings.Join(args, " "), err)
		}
	case <-time.After(30 * time.Second):
		e.t.Fatalf("git %s: its terminal stayed open 30 s after it exited\n%q", strings.Join(args, " "), out.String())
	}
	if werr != nil {
		e.t.Fatalf("git %s (in %s): %v\n%s", strings.Join(args, " "), dir, werr, out.String())
	}
	e.t.Logf("git %s on a terminal wrote:\n%q", strings.Join(args, " "), out.String())
	return out.String()
}

// shown is a summary line as read back from a terminal.
type shown struct {
	line          string
	files         int
	size, moved   float64 // bytes, as shown (three significant digits)
	share         float64 // percent already there
	sizeS, movedS string
}

var summaryRE = regexp.MustCompile(`xet: (\d+) files?, ([0-9.]+ [kMGT]?B); (?:sent|received|stored|copied) ([0-9.]+ [kMGT]?B)(?: new| from the store)? \(([0-9.]+) % already (?:stored|local)\)`)

// summaryOf finds the one summary line in a terminal's output: exactly one, alone on its row (it
// starts a row, and nothing but blanks follows it before the row ends).
func summaryOf(t *testing.T, what, out string) shown {
	t.Helper()
	if n := strings.Count(out, "xet: "); n != 1 {
		t.Fatalf("%s: %d summary lines on the terminal, want 1:\n%q", what, n, out)
	}
	rows := strings.Split(out, "\n")
	var row string
	for _, r := range rows {
		if strings.Contains(r, "xet: ") {
			row = r
		}
	}
	// What a terminal shows of the row: the text after its last carriage return but one that ends
	// it (git-lfs's progress line ends each redraw with one).
	visible := strings.TrimRight(row, "\r")
	if i := strings.LastIndexByte(visible, '\r'); i >= 0 {
		visible = visible[i+1:]
	}
	visible = strings.TrimRight(visible, " ")
	m := summaryRE.FindStringSubmatch(visible)
	if m == nil || !strings.HasPrefix(visible, "xet: ") || m[0] != visible {
		t.Fatalf("%s: the summary's row shows %q, want the summary alone\n%q", what, visible, out)
	}
	files, _ := strconv.Atoi(m[1])
	share, _ := strconv.ParseFloat(m[4], 64)
	return shown{line: visible, files: files, size: parseShown(t, m[2]), moved: parseShown(t, m[3]), share: share, sizeS: m[2], movedS: m[3]}
}

// parseShown reads a size as summary.Bytes writes it.
func parseShown(t *testing.T, s string) float64 {
	t.Helper()
	num, unit, _ := strings.Cut(s, " ")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		t.Fatalf("size %q: %v", s, err)
	}
	return v * map[string]float64{"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[unit]
}

// wantHead checks the line's file count and logical size.
func wantHead(t *testing.T, got shown, files int, size int64) {
	t.Helper()
	if got.files != files || got.sizeS != summary.Bytes(size) {
		t.Errorf("%q: want %d files of %s", got.line, files, summary.Bytes(size))
	}
}

// sameBytes checks that a size shown (three significant digits) is the server's count of body
// bytes for the run: within the display's rounding, and above it by at most the batch requests'
// and answers' JSON, which git-lfs sends and the agent does not.
func sameBytes(t *testing.T, what string, shown, server float64) {
	t.Helper()
	const gitLFSJSON = 16 << 10
	if d := server - shown; d < -0.005*server || d > 0.005*server+gitLFSJSON || math.IsNaN(d) {
		t.Errorf("%s %s, while the server counted %.0f body bytes", what, summary.Bytes(int64(shown)), server)
	}
	t.Logf("%s %s; the server counted %.0f body bytes", what, summary.Bytes(int64(shown)), server)
}

// metricValue reads one unlabelled value of the server's metrics.
func metricValue(t *testing.T, url, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(metric(url, name), 64)
	if err != nil {
		t.Fatalf("metric %s at %s: %v", name, url, err)
	}
	return v
}
