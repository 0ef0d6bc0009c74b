package test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/chaos"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// The fault matrix for `migrate` (to xet-server) and for the Hub emulator's routes (the token
// routes, reconstructions, xorb uploads), through the same chaos proxy: each command succeeds by
// retrying, or fails with a message naming the cause, within the bound; the table is logged.
func TestFaultMatrixMigrateAndHub(t *testing.T) {
	buildServer(t)
	var table []string
	row := func(fault, op string, ok bool, msg string, took time.Duration, out string, err error) {
		outcome := "ok"
		if err != nil {
			outcome = "failed: " + cause(out, msg)
		}
		table = append(table, fmt.Sprintf("| %s | %s | %s | %.1f s |", fault, op, outcome, took.Seconds()))
		switch {
		case took > 90*time.Second:
			t.Errorf("%s during %s: took %v", fault, op, took)
		case ok && err != nil:
			t.Errorf("%s during %s: failed instead of retrying:\n%s", fault, op, out)
		case !ok && (err == nil || !strings.Contains(out, msg)):
			t.Errorf("%s during %s: want a failure saying %q, got %v:\n%s", fault, op, msg, err, out)
		case strings.Contains(out, "sig=") || strings.Contains(out, hubWriteToken):
			t.Errorf("%s during %s: a signed URL or the token in the output:\n%s", fault, op, out)
		}
	}
	migrateRows(t, row)
	hubRows(t, row)
	hubBridgeRows(t, row)
	t.Logf("fault matrix, migrate and Hub:\n| fault | command | outcome | time |\n|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

type matrixRow func(fault, op string, ok bool, msg string, took time.Duration, out string, err error)

// run runs name args in dir with env, bounded by 2 minutes.
func runBounded(dir string, env []string, name string, args ...string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return string(out), time.Since(start), err
}

// migrateRows: `git-xet-transfer migrate --to` xet-server behind the proxy, a fault per row.
func migrateRows(t *testing.T, row matrixRow) {
	lts := startLFSTestServer(t)
	e := newEnv(t)
	work, _ := legacyHistory(t, e, lts, 2)
	for i, c := range []struct {
		fault string
		rule  chaos.Rule
		ok    bool
		msg   string
	}{
		{"500 once on a xorb upload", chaos.Rule{Method: "POST", Prefix: "/v1/xorbs/", Kind: chaos.Status, Code: 500, Times: 1, Message: "boom"}, true, ""},
		{"connection reset on a shard", chaos.Rule{Method: "POST", Prefix: "/v2/shards", Kind: chaos.Reset, Times: 1}, true, ""},
		{"503 three times on the batch", chaos.Rule{Method: "POST", Prefix: "/org/", Kind: chaos.Status, Code: 503, Times: 3, Message: "busy"}, true, ""},
		{"answer stalled on a xorb upload", chaos.Rule{Method: "POST", Prefix: "/v1/xorbs/", Kind: chaos.Stall, Times: 1, Offset: 5}, true, ""},
		{"400 on every xorb upload", chaos.Rule{Method: "POST", Prefix: "/v1/xorbs/", Kind: chaos.Status, Code: 400, Times: 1000, Message: "xorb rejected"}, false, "xorb rejected"},
	} {
		proxy, set := startChaos(t, startServer(t, "").url) // a fresh target: nothing deduplicated away
		set(c.rule)
		vars := append(append([]string(nil), e.vars...), "GIT_XET_STALL_TIMEOUT=1s")
		out, took, err := runBounded(work, vars, filepath.Join(binDir, "git-xet-transfer"), "migrate", "--to", fmt.Sprintf("%s/org/m%d.git/info/lfs", proxy, i))
		set()
		row(c.fault, "migrate", c.ok, c.msg, took, out, err)
		if chaosHits(t, proxy, c.rule.Prefix) == 0 {
			t.Errorf("%s during migrate: no request went to %s", c.fault, c.rule.Prefix)
		}
	}
}

// hubRows: push and clone through the Hub emulator behind the proxy (HF_ENDPOINT is the proxy),
// a fault per row on the Hub's own routes.
func hubRows(t *testing.T, row matrixRow) {
	h := startHub(t, time.Hour)
	proxy, set := startChaos(t, h.url)
	front := &hubServer{xetServer: &xetServer{url: proxy, data: h.data, srv: h.srv}, log: h.log}
	for i, c := range []struct {
		fault, op string
		rule      chaos.Rule
		ok        bool
		msg       string
	}{
		{"503 three times on the LFS batch", "push", chaos.Rule{Method: "POST", Prefix: "/org/", Kind: chaos.Status, Code: 503, Times: 3, Message: "busy"}, true, ""},
		{"connection reset on a xorb upload", "push", chaos.Rule{Method: "POST", Prefix: "/v1/xorbs/", Kind: chaos.Reset, Times: 1}, true, ""},
		{"500 once on the read-token route", "clone", chaos.Rule{Method: "GET", Prefix: "/api/", Kind: chaos.Status, Code: 500, Times: 1, Message: "boom"}, true, ""},
		{"connection reset on a reconstruction", "clone", chaos.Rule{Method: "GET", Prefix: "/v2/reconstructions/", Kind: chaos.Reset, Times: 1}, true, ""},
		{"answer stalled on a reconstruction", "clone", chaos.Rule{Method: "GET", Prefix: "/v2/reconstructions/", Kind: chaos.Stall, Times: 1, Offset: 5}, true, ""},
		{"401 on every token request", "clone", chaos.Rule{Method: "GET", Prefix: "/api/", Kind: chaos.Status, Code: 401, Times: 1000, Message: "Invalid credentials"}, false, "401"},
	} {
		e := hubEnv(t, front)
		e.vars = append(e.vars, "HF_TOKEN="+hubWriteToken, "GIT_XET_STALL_TIMEOUT=1s")
		work, remote := hubRepo(t, e, front, fmt.Sprintf("org/h%d", i))
		writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(2<<20, uint64(300+i)))
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", "a")
		args := []string{"push", "-q", "origin", "main"}
		if c.op == "clone" {
			e.git(work, "push", "-q", "origin", "main")
			args = []string{"clone", "-q", remote, filepath.Join(e.home, "clone")}
		}
		before := chaosHits(t, proxy, c.rule.Prefix)
		set(c.rule)
		out, took, err := runBounded(work, e.vars, "git", args...)
		set()
		row(c.fault, "Hub "+c.op, c.ok, c.msg, took, out, err)
		if chaosHits(t, proxy, c.rule.Prefix) == before {
			t.Errorf("%s during Hub %s: no request went to %s", c.fault, c.op, c.rule.Prefix)
		}
		if c.op == "clone" && err == nil {
			sameTree(t, work, filepath.Join(e.home, "clone"))
		}
	}
}

// chaosHits is how many requests the chaos proxy at url has seen whose path starts with prefix.
func chaosHits(t *testing.T, url, prefix string) int {
	t.Helper()
	resp, err := http.Get(url + "/__chaos/hits?prefix=" + prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var n int
	fmt.Fscan(resp.Body, &n)
	return n
}

// hubBridgeRows: in batch mode (no `install --hub`), a Hub download is git-lfs's own basic GET of a
// bridge URL; faults on the bridge route must be retried too.
func hubBridgeRows(t *testing.T, row matrixRow) {
	h := startHub(t, time.Hour)
	proxy, set := startChaos(t, h.url)
	front := &hubServer{xetServer: &xetServer{url: proxy, data: h.data, srv: h.srv}, log: h.log}
	for i, c := range []struct {
		fault string
		rule  chaos.Rule
	}{
		{"500 once on the bridge", chaos.Rule{Method: "GET", Prefix: "/xet-bridge-us/", Kind: chaos.Status, Code: 500, Times: 1, Message: "boom"}},
		{"connection reset on the bridge", chaos.Rule{Method: "GET", Prefix: "/xet-bridge-us/", Kind: chaos.Reset, Times: 1}},
		{"body cut short on the bridge", chaos.Rule{Method: "GET", Prefix: "/xet-bridge-us/", Kind: chaos.Truncate, Times: 1, Offset: 100 << 10}},
	} {
		e := newEnv(t)
		e.vars = append(e.vars, "HF_ENDPOINT="+proxy)
		e.install()
		e.git("", "config", "--global", "credential.helper", "store")
		writeFile(t, filepath.Join(e.home, ".git-credentials"), []byte(strings.Replace(proxy, "://", "://hf_user:"+hubWriteToken+"@", 1)+"\n"))
		work, remote := hubRepo(t, e, front, fmt.Sprintf("org/bridge%d", i))
		writeFile(t, filepath.Join(work, "a.bin"), testutil.RandomBytes(2<<20, uint64(400+i)))
		e.git(work, "add", ".")
		e.git(work, "commit", "-q", "-m", "a")
		e.git(work, "push", "-q", "origin", "main")
		before := chaosHits(t, proxy, c.rule.Prefix)
		set(c.rule)
		out, took, err := runBounded(work, e.vars, "git", "clone", "-q", remote, filepath.Join(e.home, "clone"))
		set()
		row(c.fault, "Hub clone (batch mode)", true, "", took, out, err)
		if chaosHits(t, proxy, c.rule.Prefix) == before {
			t.Errorf("%s: no request went to %s", c.fault, c.rule.Prefix)
		}
		if err == nil {
			sameTree(t, work, filepath.Join(e.home, "clone"))
		}
	}
}
