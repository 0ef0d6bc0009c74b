package test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// The web view in a real browser: alice and bob push to their own repositories of a real
// xet-server with a users file; headless Chromium, signed in as alice, renders /ui/ and her
// repository's page. The DOM's numbers equal `xet-server stats --json` for the same store, bob's
// repository appears nowhere, her objects are listed in the order she pushed them with what each
// stored, and a screenshot of her repository's page is kept as the test's artifact.
//
// Chromium does not send the user info of a URL as Basic credentials without a prompt it cannot
// show headless, so the browser goes through a loopback reverse proxy of the test that adds
// alice's Authorization header to every request (as a browser does once the user has answered
// the server's Basic challenge).
func TestWebViewInBrowser(t *testing.T) {
	browser := needChromium(t)
	buildServer(t)
	users := filepath.Join(t.TempDir(), "users")
	writeFile(t, users, []byte(servertest.UserLine("alice", "pw-alice", ":write:"+"alice/*")+servertest.UserLine("bob", "pw-bob", ":write:"+"bob/*")))
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--users", users)

	model := testutil.RandomBytes(6<<20, 91)
	tokenizer := testutil.RandomBytes(40<<10, 92)
	alice := pushAs(t, s.addr, "alice", "pw-alice", "alice/model", map[string][]byte{"model.bin": model, "tokenizer.bin": tokenizer})
	model2 := bytes.Clone(model)
	copy(model2[3<<20:], testutil.RandomBytes(64<<10, 93)) // a fine-tuned version: most chunks shared
	alice.commit(map[string][]byte{"model.bin": model2})
	pushAs(t, s.addr, "bob", "pw-bob", "bob/weights", map[string][]byte{"weights.bin": testutil.RandomBytes(3<<20+12345, 94)})

	stats := statsJSON(t, s.data)
	mine, theirs := stats.Repos["alice/model"], stats.Repos["bob/weights"]
	if mine.Files != 3 || theirs.Files != 1 {
		t.Fatalf("stats: %+v", stats)
	}
	proxy := basicAuthProxy(t, "http://"+s.addr, "alice", "pw-alice")

	index := dumpDOM(t, browser, proxy+"/ui/")
	if got := domAttrs(index, "data-repo"); !slices.Equal(got, []string{"alice/model"}) {
		t.Fatalf("alice's index lists %v\n%s", got, index)
	}
	checkNumbers(t, "index", index, mine)
	for _, leak := range []string{"bob", "weights", strconv.FormatUint(theirs.Stored, 10), strconv.FormatUint(theirs.Logical, 10)} {
		if strings.Contains(index, leak) {
			t.Fatalf("alice's index holds %q, of bob's repository:\n%s", leak, index)
		}
	}

	page := dumpDOM(t, browser, proxy+"/ui/repo?name=alice/model")
	checkNumbers(t, "repository page", page, mine)
	oids := domAttrs(page, "data-oid")
	if len(oids) != 3 || oids[2] != sha256Hex(model2) || !slices.Contains(oids[:2], sha256Hex(model)) || !slices.Contains(oids[:2], sha256Hex(tokenizer)) {
		t.Fatalf("objects listed %v, want model.bin and tokenizer.bin, then model.bin's second version", oids)
	}
	news := domUints(t, page, "data-new")
	var stored uint64
	for _, n := range news {
		stored += n
	}
	if news[2] >= uint64(len(model2))/4 || stored != mine.Stored {
		t.Fatalf("new bytes per object %v (the second version of model.bin stored %d of %d); their sum %d, stats' stored %d",
			news, news[2], len(model2), stored, mine.Stored)
	}
	if !strings.Contains(page, `<svg class="chart"`) || !slices.Equal(domAttrs(page, "data-chart-logical"), []string{strconv.FormatUint(mine.Logical, 10)}) {
		t.Fatalf("no chart of alice's %d logical bytes:\n%s", mine.Logical, page)
	}
	if strings.Contains(page, "bob") {
		t.Fatalf("alice's repository page names bob:\n%s", page)
	}
	for _, secret := range []string{"pw-alice", base64.StdEncoding.EncodeToString([]byte("alice:pw-alice")), "X-Xet-", "sig=", "/xorbs/", "X-Amz-"} {
		if strings.Contains(index+page, secret) {
			t.Fatalf("a page holds %q", secret)
		}
	}
	if code, body := servertest.Get(t, proxy+"/ui/repo?name=bob/weights"); code != http.StatusNotFound || strings.Contains(body, "bob") {
		t.Fatalf("bob's repository for alice: %d\n%s", code, body)
	}

	shot := filepath.Join(t.ArtifactDir(), "webui-repository.png")
	runChromium(t, browser, "--window-size=1280,1500", "--screenshot="+shot, proxy+"/ui/repo?name=alice/model")
	if b, err := os.ReadFile(shot); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot of alice's repository page: %s", shot)
}

// needChromium is the path of a headless-capable Chromium; the test skips without one, except in
// CI.
func needChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (required under CI=true; .ci/run installs it)")
	}
	t.Skip("chromium is not installed")
	return ""
}

// runChromium runs the browser headless on a fresh profile with args and returns its stdout. It
// is stopped, with everything it started, after a minute, or once it has exited.
func runChromium(t *testing.T, browser string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	flags := []string{"--headless", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}
	if os.Geteuid() == 0 {
		flags = append(flags, "--no-sandbox") // its sandbox refuses to run as root
	}
	cmd := exec.CommandContext(ctx, browser, append(flags, args...)...)
	newProcessGroup(cmd)
	cmd.Cancel = func() error { return signalProcessGroup(cmd) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = signalProcessGroup(cmd) // a helper process it left behind
	}
	if err != nil {
		t.Fatalf("chromium %s: %v (%v)\n%s", strings.Join(args, " "), err, ctx.Err(), tail(stderr.String(), 3000))
	}
	return stdout.String()
}

// dumpDOM is the DOM Chromium renders for u.
func dumpDOM(t *testing.T, browser, u string) string {
	t.Helper()
	dom := runChromium(t, browser, "--dump-dom", u)
	if !strings.Contains(dom, "</html>") {
		t.Fatalf("no page rendered for %s:\n%s", u, dom)
	}
	return dom
}

// basicAuthProxy serves on loopback what target serves, adding user's Basic credentials to every
// request, and returns its URL.
func basicAuthProxy(t *testing.T, target, user, password string) string {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	cred := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	p := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(to)
		r.Out.Header.Set("Authorization", cred)
	}}
	srv := httptest.NewServer(servertest.FullDuplex(p))
	t.Cleanup(srv.Close)
	return srv.URL
}

// repoPush is a work tree pushing to one repository of the server.
type repoPush struct {
	t    *testing.T
	e    *env
	work string
}

// pushAs makes a work tree whose LFS goes to repo on the server at addr as user, commits files
// (*.bin) and pushes them.
func pushAs(t *testing.T, addr, user, password, repo string, files map[string][]byte) *repoPush {
	t.Helper()
	e := newEnv(t)
	e.install()
	work, _ := batchRepo(t, e, "http://"+user+":"+password+"@"+addr+"/"+repo+".git/info/lfs")
	p := &repoPush{t: t, e: e, work: work}
	p.commit(files)
	return p
}

// commit writes files, commits and pushes them.
func (p *repoPush) commit(files map[string][]byte) {
	p.t.Helper()
	for name, b := range files {
		writeFile(p.t, filepath.Join(p.work, name), b)
	}
	p.e.git(p.work, "add", ".")
	p.e.git(p.work, "commit", "-q", "-m", "update")
	p.e.git(p.work, "push", "-q", "origin", "main")
}

// repoStats is a repository of `xet-server stats --json`.
type repoStats struct {
	Files   int     `json:"files"`
	Logical uint64  `json:"logical_bytes"`
	Stored  uint64  `json:"stored_bytes"`
	Ratio   float64 `json:"dedupe_ratio"`
}

func statsJSON(t *testing.T, data string) struct {
	Repos map[string]repoStats `json:"repositories"`
} {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "xet-server"), "stats", "--json", data).Output()
	var v struct {
		Repos map[string]repoStats `json:"repositories"`
	}
	if err == nil {
		err = json.Unmarshal(out, &v)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("stats --json: %v\n%s", err, ee.Stderr)
	} else if err != nil {
		t.Fatalf("stats --json: %v\n%s", err, out)
	}
	return v
}

// checkNumbers fails unless the first repository numbers of a page are want's.
func checkNumbers(t *testing.T, what, dom string, want repoStats) {
	t.Helper()
	got := map[string]string{}
	for _, a := range []string{"data-files", "data-logical", "data-stored", "data-ratio"} {
		if v := domAttrs(dom, a); len(v) > 0 {
			got[a] = v[0]
		}
	}
	ratio, err := strconv.ParseFloat(got["data-ratio"], 64)
	if got["data-files"] != strconv.Itoa(want.Files) || got["data-logical"] != strconv.FormatUint(want.Logical, 10) ||
		got["data-stored"] != strconv.FormatUint(want.Stored, 10) || err != nil || ratio != want.Ratio {
		t.Fatalf("%s shows %v; xet-server stats --json says %+v", what, got, want)
	}
}

// domAttrs is every value of attribute name in dom, unescaped, in document order.
func domAttrs(dom, name string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\s`+regexp.QuoteMeta(name)+`="([^"]*)"`).FindAllStringSubmatch(dom, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

func domUints(t *testing.T, dom, name string) []uint64 {
	t.Helper()
	var out []uint64
	for _, s := range domAttrs(dom, name) {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, s, err)
		}
		out = append(out, n)
	}
	return out
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
