package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/chaos"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// startChaos builds and starts the chaos proxy (test/chaos) in front of backend; it returns the
// proxy's URL and a function that replaces its rules.
func startChaos(t *testing.T, backend string) (string, func(...chaos.Rule)) {
	t.Helper()
	bin := buildTool(t, "chaos", "./chaos")
	addr := servertest.FreeAddr(t)
	var log strings.Builder
	cmd := exec.Command(bin, "-listen", addr, "-backend", backend)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := "http://" + addr
	if !testutil.Eventually(20*time.Second, func() bool {
		resp, err := http.Get(url + "/__chaos/hits")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}) {
		t.Fatalf("chaos did not start\n%s", log.String())
	}
	set := func(rules ...chaos.Rule) {
		req, _ := http.NewRequest("DELETE", url+"/__chaos/rules", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		if len(rules) == 0 {
			return
		}
		b, _ := json.Marshal(rules)
		b = bytes.ReplaceAll(b, []byte(`"kind":`), []byte(`"kind_n":`)) // kinds go by name, below
		var raw []map[string]any
		json.Unmarshal(b, &raw)
		for i, r := range rules {
			raw[i]["kind"] = kindName(r.Kind)
			delete(raw[i], "kind_n")
		}
		b, _ = json.Marshal(raw)
		resp, err := http.Post(url+"/__chaos/rules", "application/json", bytes.NewReader(b))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("setting chaos rules: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	return url, set
}

func kindName(k chaos.Kind) string {
	return map[chaos.Kind]string{chaos.Status: "status", chaos.Reset: "reset", chaos.Truncate: "truncate", chaos.Flip: "flip",
		chaos.Stall: "stall", chaos.Trickle: "trickle", chaos.WrongRange: "wrong-range", chaos.OtherLength: "other-length"}[k]
}

// faultCase is one row of the matrix: a fault on a route during a command, and what must happen.
type faultCase struct {
	fault string
	op    string // push, clone or pull
	rule  chaos.Rule
	ok    bool   // the command must succeed (by retrying); else it must fail with a clear message:
	msg   string // what that message must say
	size  int    // of the file; 0: 2 MiB
}

func faultCases() []faultCase {
	up := func(r chaos.Rule) chaos.Rule { r.Method, r.Prefix = "POST", "/v1/xorbs/"; return r }
	down := func(r chaos.Rule) chaos.Rule { r.Method, r.Prefix = "GET", "/xorbs/"; return r }
	var cs []faultCase
	for _, c := range []struct {
		fault string
		rule  chaos.Rule
	}{
		{"500 once", chaos.Rule{Kind: chaos.Status, Code: 500, Times: 1, Message: "boom"}},
		{"503 three times", chaos.Rule{Kind: chaos.Status, Code: 503, Times: 3, Message: "busy"}},
		{"429 with Retry-After: 1", chaos.Rule{Kind: chaos.Status, Code: 429, Times: 1, RetryAfter: 1, Message: "slow down"}},
		{"connection reset", chaos.Rule{Kind: chaos.Reset, Times: 1}},
		{"answer stalled", chaos.Rule{Kind: chaos.Stall, Times: 1, Offset: 10}},
	} {
		cs = append(cs, faultCase{c.fault, "push", up(c.rule), true, "", 0}, faultCase{c.fault, "clone", down(c.rule), true, "", 0},
			faultCase{c.fault, "pull", down(c.rule), true, "", 0})
	}
	return append(cs,
		faultCase{"body cut short (full Content-Length)", "clone", down(chaos.Rule{Kind: chaos.Truncate, Times: 1, Offset: 100 << 10}), true, "", 0},
		faultCase{"trickle 1 MB/s", "clone", down(chaos.Rule{Kind: chaos.Trickle, Times: 1, Rate: 1 << 20}), true, "", 0},
		// every answer slow, but above the floor: kept
		faultCase{"trickle 10 KB/s, every answer (a 96 KiB file)", "clone", down(chaos.Rule{Kind: chaos.Trickle, Times: 1000, Rate: 10 << 10}), true, "", 96 << 10},
		// a few bytes at a time, never silent for the stall time: each answer is abandoned under the
		// floor (retry.MinRate), where it held the clone for as long as 2 MiB take at 32 B/s (days)
		faultCase{"trickle 32 B/s, every answer", "clone", down(chaos.Rule{Kind: chaos.Trickle, Times: 1000, Rate: 32}), false, "the answer trickled", 0},
		faultCase{"body of another length", "clone", down(chaos.Rule{Kind: chaos.OtherLength, Times: 1, Offset: 100 << 10}), true, "", 0},
		faultCase{"wrong Content-Range", "clone", down(chaos.Rule{Kind: chaos.WrongRange, Times: 1}), true, "", 0},
		faultCase{"403 on a signed URL (expired)", "clone", down(chaos.Rule{Kind: chaos.Status, Code: 403, Times: 1, Message: "expired"}), true, "", 0},
		faultCase{"flipped byte, every time", "clone", down(chaos.Rule{Kind: chaos.Flip, Times: 100, Offset: 5000}), false, "content does not match the file hash", 0},
		faultCase{"400 on every xorb upload", "push", up(chaos.Rule{Kind: chaos.Status, Code: 400, Times: 100, Message: "xorb rejected"}), false, "upload xorb", 0},
	)
}

// The fault matrix: push and clone through a chaos proxy in front of xet-server, one fault per
// row. Each command succeeds by retrying, or fails with a message that names the route and the
// cause and no signed URL, within a bound; the table (fault, command, outcome, time) is logged.
func TestFaultMatrix(t *testing.T) {
	buildServer(t)
	s := startServer(t, "")
	proxy, set := startChaos(t, s.url)
	var table []string
	for i, c := range faultCases() {
		e := newEnv(t)
		e.install()
		e.vars = append(e.vars, "GIT_XET_STALL_TIMEOUT=1s")
		ns := fmt.Sprintf("team/m%02d", i)
		work, remote := batchRepo(t, e, proxy+"/"+ns+".git/info/lfs")
		size := 2 << 20
		if c.size > 0 {
			size = c.size
		}
		writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(size, uint64(100+i)))
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", "a")
		args := []string{"push", "-q", "origin", "main"}
		dir := work
		switch c.op {
		case "clone":
			e.git(work, "push", "-q", "origin", "main")
			args = []string{"clone", "-q", remote, filepath.Join(e.home, "clone")}
		case "pull": // a clone without the LFS objects, then `git lfs pull` under the fault
			e.git(work, "push", "-q", "origin", "main")
			dir = filepath.Join(e.home, "clone")
			skip := e.cmd("", "git", "clone", "-q", remote, dir)
			skip.Env = append(skip.Env, "GIT_LFS_SKIP_SMUDGE=1")
			if out, err := skip.CombinedOutput(); err != nil {
				t.Fatalf("clone: %v\n%s", err, out)
			}
			args = []string{"lfs", "pull"}
		}
		set(c.rule)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		start := time.Now()
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir, cmd.Env = dir, e.vars
		cmd.WaitDelay = 5 * time.Second // git-lfs's children may hold the output open
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		cancel()
		set()
		outcome := "ok"
		if err != nil {
			outcome = "failed: " + cause(string(out), c.msg)
		}
		table = append(table, fmt.Sprintf("| %s | %s | %s | %.1f s |", c.fault, c.op, outcome, took.Seconds()))
		switch {
		case took > 90*time.Second:
			t.Errorf("%s during %s: took %v", c.fault, c.op, took)
		case c.ok && err != nil:
			t.Errorf("%s during %s: failed instead of retrying:\n%s", c.fault, c.op, out)
		case !c.ok && err == nil:
			t.Errorf("%s during %s: succeeded", c.fault, c.op)
		case !c.ok && (!strings.Contains(string(out), c.msg) || !strings.Contains(string(out), "a.bin") && c.op == "clone"):
			t.Errorf("%s during %s: the message does not say %q:\n%s", c.fault, c.op, c.msg, out)
		case strings.Contains(string(out), "sig="):
			t.Errorf("%s during %s: a signed URL in the output:\n%s", c.fault, c.op, out)
		}
		if c.op != "push" && err == nil {
			sameTree(t, work, filepath.Join(e.home, "clone"))
		}
	}
	t.Logf("fault matrix (go test ./test -run TestFaultMatrix -v):\n| fault | command | outcome | time |\n|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

// cause is the part of out that says why the command failed: from msg on, to the end of its line.
func cause(out, msg string) string {
	i := strings.Index(out, msg)
	if msg == "" || i < 0 {
		return "(no message)"
	}
	l := out[i:]
	if j := strings.IndexByte(l, '\n'); j >= 0 {
		l = l[:j]
	}
	if len(l) > 110 {
		l = l[:110] + "…"
	}
	return l
}
