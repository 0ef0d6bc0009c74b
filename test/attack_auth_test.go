package test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
)

// The attacks of issue 41 on the server's credentials and authentication (items 1, 7 and the
// server's part of 8), each against a real xet-server process over real HTTP on loopback. The
// storage backend plays no part in any of them (they are decided before a byte is stored), so they
// run on the filesystem only.

// kdfUser is a users-file line, newline included, with the $pbkdf2-sha256$ hash hash-password
// writes.
func kdfUser(t *testing.T, name, pw string) string {
	t.Helper()
	h, err := server.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	return name + ":" + h + "\n"
}

// startAuthServer starts xet-server with the users file of lines; it returns the server and the
// users file's path.
func startAuthServer(t *testing.T, lines ...string) (*xetServerProcess, string) {
	t.Helper()
	buildServer(t)
	users := filepath.Join(t.TempDir(), "users")
	servertest.WriteUsers(t, users, lines...)
	return startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--users", users), users
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %.300s", a.status, a.body) }

// call sends one request with c; hdr holds header name/value pairs.
func call(t *testing.T, c *http.Client, method, url string, body []byte, hdr ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return answer{res.StatusCode, res.Header, b}
}

func batchJSON(op string, transfers []string, objs ...lfsbatch.Object) []byte {
	b, _ := json.Marshal(lfsbatch.Request{Operation: op, Transfers: transfers, Objects: objs, HashAlgo: "sha256"})
	return b
}

// clientFrom is an HTTP client whose connections leave from the loopback address ip (127.0.0.0/8
// is all loopback on Linux): another source address on this machine.
func clientFrom(t *testing.T, ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

// tokenExp is the expiry a server token carries (its claims are readable by its holder).
func tokenExp(t *testing.T, tok string) int64 {
	t.Helper()
	tok = strings.TrimPrefix(tok, "Bearer ")
	parts := strings.Split(strings.TrimPrefix(tok, "xet1."), ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[0])
	var c struct{ Exp int64 }
	if err != nil || json.Unmarshal(b, &c) != nil || c.Exp == 0 {
		t.Fatalf("not a server token: %.40q", tok)
	}
	return c.Exp
}

// cpuSeconds is the CPU time process pid has used (user + system).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// Item 1. A CAS token of a batch answer, sent back to the batch route, gets 200 with fresh tokens
// and a fresh 12-hour refresh credential; and once its user is removed (users file, SIGHUP), the
// minted tokens still work. After the fix: the batch route takes no CAS token; what a refresh
// credential mints expires with it; every token is checked against the users table in force, so a
// removed user's tokens stop at the next request, a user downgraded to read stops writing with the
// write token they hold, and a changed password voids the tokens of the old one.
func TestAttackTokenOutlivesUser(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("reloads the users file with SIGHUP")
	}
	s, users := startAuthServer(t, servertest.UserLine("alice", "alice-pw-1", ""), servertest.UserLine("bob", "bob-pw-2", ""))
	base, c := "http://"+s.addr, http.DefaultClient
	batchURL := base + "/team/a.git/info/lfs/objects/batch"
	obj := lfsbatch.Object{OID: strings.Repeat("ab", 32), Size: 10}
	up := call(t, c, "POST", batchURL, batchJSON("upload", []string{"xet"}, obj), servertest.Basic("alice", "alice-pw-1")...)
	var br lfsbatch.Response
	if up.status != 200 || json.Unmarshal(up.body, &br) != nil || len(br.Objects) != 1 || br.Objects[0].Actions["upload"] == nil {
		t.Fatalf("xet upload batch as alice: %v", up)
	}
	act := br.Objects[0].Actions["upload"]
	casTok, refresh := act.Header[lfsbatch.HeaderAccessToken], act.Header["Authorization"]

	// A CAS token opens no batch (git-lfs never sends one there): it would mint tokens of a new life.
	if a := call(t, c, "POST", batchURL, batchJSON("upload", []string{"xet"}, obj), servertest.Bearer(casTok)...); a.status != 401 {
		t.Errorf("batch with a CAS token: %v, want 401", a)
	}
	// The refresh credential mints CAS tokens that expire no later than itself.
	a := call(t, c, "GET", act.Href, nil, "Authorization", refresh)
	var minted struct{ AccessToken string }
	if a.status != 200 || json.Unmarshal(a.body, &minted) != nil || minted.AccessToken == "" {
		t.Fatalf("refresh at href: %v", a)
	}
	if tokenExp(t, minted.AccessToken) > tokenExp(t, refresh) {
		t.Errorf("a CAS token minted from a refresh credential outlives it")
	}
	bobTok := servertest.RouteToken(t, base+"/api/models/team/a/xet-write-token/main", servertest.Basic("bob", "bob-pw-2")...)
	xorbURL := base + "/v1/xorbs/default/" + strings.Repeat("0", 64)
	for name, tok := range map[string]string{"alice's": casTok, "alice's refreshed": minted.AccessToken, "bob's": bobTok} {
		if a := call(t, c, "HEAD", xorbURL, nil, servertest.Bearer(tok)...); a.status != 404 {
			t.Fatalf("%s CAS token before the change: %v", name, a)
		}
	}
	if a := call(t, c, "POST", xorbURL, []byte("not a xorb"), servertest.Bearer(bobTok)...); a.status == 401 || a.status == 403 {
		t.Fatalf("bob's write token before the change: %v", a)
	}

	// Remove alice, downgrade bob to read, reload.
	servertest.WriteUsers(t, users, servertest.UserLine("bob", "bob-pw-2", ":read"))
	reload(t, s, base, "alice", "alice-pw-1", 401)
	for name, tok := range map[string]string{"CAS token": casTok, "refreshed CAS token": minted.AccessToken} {
		if a := call(t, c, "HEAD", xorbURL, nil, servertest.Bearer(tok)...); a.status != 401 {
			t.Errorf("removed user's %s on a CAS route: %v, want 401", name, a)
		}
	}
	if a := call(t, c, "GET", act.Href, nil, "Authorization", refresh); a.status != 401 {
		t.Errorf("removed user's refresh credential: %v, want 401", a)
	}
	if a := call(t, c, "GET", base+"/team/a.git/info/lfs/objects/"+obj.OID, nil, servertest.Bearer(casTok)...); a.status != 401 {
		t.Errorf("removed user's CAS token on an LFS object route: %v, want 401", a)
	}
	if a := call(t, c, "POST", xorbURL, []byte("not a xorb"), servertest.Bearer(bobTok)...); a.status != 403 {
		t.Errorf("a user downgraded to read, writing with their write token: %v, want 403", a)
	}
	if a := call(t, c, "HEAD", xorbURL, nil, servertest.Bearer(bobTok)...); a.status != 404 {
		t.Errorf("a user downgraded to read, reading with their write token: %v, want 404", a)
	}

	// alice comes back with another password: what the old one minted stays void.
	servertest.WriteUsers(t, users, servertest.UserLine("alice", "alice-new-pw-3", ""), servertest.UserLine("bob", "bob-pw-2", ":read"))
	reload(t, s, base, "alice", "alice-new-pw-3", 200)
	if a := call(t, c, "GET", act.Href, nil, "Authorization", refresh); a.status != 401 {
		t.Errorf("refresh credential of a changed password: %v, want 401", a)
	}
	if a := call(t, c, "HEAD", xorbURL, nil, servertest.Bearer(casTok)...); a.status != 401 {
		t.Errorf("CAS token of a changed password: %v, want 401", a)
	}
}

// reload sends the server SIGHUP and waits until user's password gets want on a download batch
// (the new users file in force).
func reload(t *testing.T, s *xetServerProcess, base, user, pw string, want int) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	body := batchJSON("download", nil, lfsbatch.Object{OID: strings.Repeat("cd", 32), Size: 1})
	var last answer
	if !testutil.Eventually(10*time.Second, func() bool {
		last = call(t, http.DefaultClient, "POST", base+"/team/a.git/info/lfs/objects/batch", body, servertest.Basic(user, pw)...)
		return last.status == want
	}) {
		t.Fatalf("after SIGHUP, %s's batch answers %v, want %d", user, last, want)
	}
}

// kdfCPU is the CPU seconds of one PBKDF2 of hash-password's cost on this machine (measured here,
// so that the bounds below hold on slower machines too).
func kdfCPU(t *testing.T) float64 {
	t.Helper()
	cpu0 := cpuSeconds(t, os.Getpid())
	for range 3 {
		if _, err := server.HashPassword("measure-the-kdf"); err != nil {
			t.Fatal(err)
		}
	}
	return (cpuSeconds(t, os.Getpid()) - cpu0) / 3
}

// Item 7. Each wrong Basic password for a known user costs the server 600,000 PBKDF2 iterations,
// none cached, so a guesser on the network keeps cores busy. After the fix a (user, source address)
// pays at most one KDF per window, later tries in it are refused (429, Retry-After) without one;
// the user who mistyped gets in with the right password when the window ends; a guesser at another
// address does not lock the user out.
func TestAttackPasswordGuessing(t *testing.T) {
	needLinux(t)
	s, _ := startAuthServer(t, kdfUser(t, "alice", "alice-password-1"), kdfUser(t, "bob", "bob-password-2"))
	base, kdf := "http://"+s.addr, kdfCPU(t)
	batchURL := base + "/team/a.git/info/lfs/objects/batch"
	body := batchJSON("download", nil, lfsbatch.Object{OID: strings.Repeat("cd", 32), Size: 1})
	c := clientFrom(t, "127.0.0.1")
	cpu0 := cpuSeconds(t, s.cmd.Process.Pid)
	const tries = 40
	for i := range tries {
		if a := call(t, c, "POST", batchURL, body, servertest.Basic("alice", fmt.Sprintf("guess-%d", i))...); a.status != 401 && a.status != 429 {
			t.Fatalf("wrong password %d: %v", i, a)
		}
	}
	used := cpuSeconds(t, s.cmd.Process.Pid) - cpu0
	t.Logf("%d wrong passwords: %.2f s of server CPU (one KDF: %.2f s)", tries, used, kdf)
	if used > 8*kdf {
		t.Errorf("%d wrong passwords cost the server %.2f s of CPU, %.0f KDFs", tries, used, used/kdf)
	}

	// alice, who mistyped, gets in with the right password once the window is over; until then
	// she is told to wait, not that the password is wrong.
	var last answer
	if !testutil.Eventually(10*time.Second, func() bool {
		last = call(t, c, "POST", batchURL, body, servertest.Basic("alice", "alice-password-1")...)
		if last.status == 429 && last.header.Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After")
		}
		return last.status != 429
	}) || last.status != 200 {
		t.Fatalf("the right password after wrong ones: %v", last)
	}

	// A guesser at another address does not keep bob out.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var answered atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		guess(ctx, clientFrom(t, "127.0.0.2"), batchURL, body, "bob", &answered)
	}()
	defer func() { cancel(); wg.Wait() }()
	if !testutil.Eventually(10*time.Second, func() bool { return answered.Load() >= 5 }) {
		t.Fatal("the guesser got no answers")
	}
	if a := call(t, c, "POST", batchURL, body, servertest.Basic("bob", "bob-password-2")...); a.status != 200 {
		t.Errorf("bob's first login while another address guesses his password: %v", a)
	}
}

// guess sends wrong passwords for user until ctx ends, counting the answers.
func guess(ctx context.Context, c *http.Client, url string, body []byte, user string, answered *atomic.Int64) {
	for i := 0; ctx.Err() == nil; i++ {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(string(body)))
		req.SetBasicAuth(user, fmt.Sprintf("guess-%d", i))
		if res, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			answered.Add(1)
		}
	}
}

// Item 7. An unknown user name cost one SHA-256 where a known one costs a PBKDF2: the time of a 401
// told which names exist. After the fix both cost the same KDF and get the same answer.
func TestAttackUnknownUserCostsTheSame(t *testing.T) {
	needLinux(t)
	names := []string{"ann", "ben", "cat"}
	var lines []string
	for _, n := range names {
		lines = append(lines, kdfUser(t, n, n+"-password"))
	}
	s, _ := startAuthServer(t, lines...)
	batchURL := "http://" + s.addr + "/team/a.git/info/lfs/objects/batch"
	body := batchJSON("download", nil, lfsbatch.Object{OID: strings.Repeat("cd", 32), Size: 1})
	cost := func(ip string, users []string) (float64, []string) {
		c := clientFrom(t, ip)
		var answers []string
		cpu0 := cpuSeconds(t, s.cmd.Process.Pid)
		for _, u := range users {
			a := call(t, c, "POST", batchURL, body, servertest.Basic(u, "not-the-password")...)
			answers = append(answers, fmt.Sprint(a.status, " ", strings.ReplaceAll(string(a.body), u, "NAME")))
		}
		return cpuSeconds(t, s.cmd.Process.Pid) - cpu0, answers
	}
	known, knownAnswers := cost("127.0.0.3", names)
	unknown, unknownAnswers := cost("127.0.0.4", []string{"xander", "yvonne", "zeno"})
	t.Logf("3 wrong passwords: %.2f s of server CPU for known users, %.2f s for unknown ones", known, unknown)
	if unknown < known/2 || known < unknown/2 {
		t.Errorf("known users cost %.2f s, unknown ones %.2f s: the time tells which names exist", known, unknown)
	}
	if strings.Join(knownAnswers, "\n") != strings.Join(unknownAnswers, "\n") {
		t.Errorf("known users are answered\n%s\nunknown ones\n%s", knownAnswers, unknownAnswers)
	}
}

// Item 7. The batch route decoded up to 16 MiB of JSON before it authenticated: anyone could make
// it wait for and parse a large body. After the fix a request without valid credentials is answered
// 401 before its body is read, on the batch route and on a CAS upload route, whatever length the
// body announces (net/http itself would otherwise read up to 256 KiB of an unread body first).
func TestAttackBodyBeforeAuth(t *testing.T) {
	s, _ := startAuthServer(t, servertest.UserLine("alice", "alice-pw-1", ""))
	wrong := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("alice:wrong")) + "\r\n"
	for _, rq := range []struct{ name, path, cred, length string }{
		{"batch, no credentials, 16 MB", "/team/a.git/info/lfs/objects/batch", "", "16000000"},
		{"batch, wrong password, 16 MB", "/team/a.git/info/lfs/objects/batch", wrong, "16000000"},
		{"batch, no credentials, 100 KB", "/team/a.git/info/lfs/objects/batch", "", "100000"},
		{"xorb upload, no token, 60 MB", "/v1/xorbs/default/" + strings.Repeat("0", 64), "", "60000000"},
		{"xorb upload, forged token, 100 KB", "/v1/xorbs/default/" + strings.Repeat("0", 64), "Authorization: Bearer xet1.e30.AAAA\r\n", "100000"},
	} {
		conn, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// The body announced, 34 bytes of it sent: a server that reads the body first waits.
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %s\r\n\r\n{\"operation\":\"upload\",\"objects\":[",
			rq.path, s.addr, rq.cred, rq.length)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("%s: no answer before the body: %v", rq.name, err)
			continue
		}
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Errorf("%s: %d before the body, want 401", rq.name, res.StatusCode)
		}
	}
}

// Item 8. Without a users file the server allowed every request whatever its Host: a web page whose
// name resolves to 127.0.0.1 (DNS rebinding) could read and write it from the browser. After the
// fix an open server answers only requests for a loopback name or address.
func TestAttackOpenModeHost(t *testing.T) {
	buildServer(t)
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir())
	_, port, _ := net.SplitHostPort(s.addr)
	body := batchJSON("download", nil, lfsbatch.Object{OID: strings.Repeat("cd", 32), Size: 1})
	for host, want := range map[string]int{"127.0.0.1:" + port: 200, "localhost:" + port: 200, "[::1]:" + port: 200,
		"attacker.example:" + port: 403, "attacker.example": 403, "127.0.0.1.attacker.example:" + port: 403} {
		req, err := http.NewRequest("POST", "http://"+s.addr+"/team/a.git/info/lfs/objects/batch", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %s: %d %s, want %d", host, res.StatusCode, b, want)
		}
	}
}

// A web page on any site may send "simple" cross-origin POSTs (no preflight) to an open server on
// loopback under its own name, 127.0.0.1, which the Host check takes: the browser sends the page's
// Origin, and the open server refuses a request from a page of another host before any route
// runs (before, such a page could upload xorbs and register shards there, blind). A page the
// server itself served (its web view) and clients that send no Origin (git-lfs, xet-core, the
// agent) are let through.
func TestAttackOpenModeCrossOrigin(t *testing.T) {
	buildServer(t)
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir())
	for origin, refused := range map[string]bool{"": false, "http://" + s.addr: false, "http://localhost": false,
		"https://attacker.example": true, "null": true, "http://127.0.0.1.attacker.example": true} {
		for _, path := range []string{"/v1/shards", "/v1/xorbs/default/" + strings.Repeat("ab", 32)} {
			req, err := http.NewRequest("POST", "http://"+s.addr+path, strings.NewReader("not a shard"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "text/plain")
			if origin != "" {
				req.Header.Set("Origin", origin)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if got := res.StatusCode == http.StatusForbidden; got != refused {
				t.Errorf("POST %s from Origin %q: %d %s (refused: want %v)", path, origin, res.StatusCode, b, refused)
			}
		}
	}
}

// Item 8. A $sha256$ hash with an empty salt was taken: the users file is refused with a clear error.
func TestAttackEmptySaltRefused(t *testing.T) {
	buildServer(t)
	users := filepath.Join(t.TempDir(), "users")
	sum := sha256.Sum256([]byte("machine-password"))
	servertest.WriteUsers(t, users, "ci:$sha256$$"+hex.EncodeToString(sum[:])+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "xet-server"), "--listen", servertest.FreeAddr(t), "--data", t.TempDir(), "--users", users).CombinedOutput()
	if ctx.Err() != nil || err == nil || !strings.Contains(string(out), "empty salt") {
		t.Fatalf("a users file with an empty salt: %v (timed out: %v)\n%s", err, ctx.Err() != nil, out)
	}
}

// A metrics listener published through a port mapping (Docker's `-p 127.0.0.1:9100:9100` of a
// container's `--metrics-listen 0.0.0.0:9100`, as docs/server.md shows) is not on loopback for
// xet-server, so its Host rule is off, while a page whose name rebinds to 127.0.0.1 reaches it.
// Here a loopback front stands for the mapping: it serves the rebound page at / and passes
// /metrics to the real listener as the container sees it (Host: its own address), the browser's
// headers as they came. Headless Chromium loads the page, whose script reads /metrics. Before the
// fix it read the server's counters; now it gets 403, while the same address typed by a person
// still shows them.
func TestAttackMetricsThroughAPortMapping(t *testing.T) {
	browser := needChromium(t)
	buildServer(t)
	maddr := servertest.FreeAddr(t)
	s := startServerProcess(t, servertest.FreeAddr(t), t.TempDir(), "--metrics-listen", maddr)
	if code, _ := servertest.Get(t, "http://"+s.addr+"/healthz"); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	const page = `<!doctype html><html><body><pre id="out">waiting</pre><script>
fetch("/metrics").then(r => r.text().then(b => {
  document.getElementById("out").textContent = "status " + r.status + (b.includes("xet_http_requests_total") ? " COUNTERS READ" : " no counters");
})).catch(e => { document.getElementById("out").textContent = "failed " + e; });
</script></body></html>`
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, page)
			return
		}
		req, err := http.NewRequest("GET", "http://"+maddr+"/metrics", nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header = r.Header.Clone() // Sec-Fetch-*, Origin: what the browser sent
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	}))
	t.Cleanup(front.Close)

	dom := runChromium(t, browser, "--virtual-time-budget=10000", "--dump-dom", front.URL+"/")
	if !strings.Contains(dom, "status 403 no counters") {
		t.Errorf("the rebound page's read of /metrics: want 403 and no counters, the page shows:\n%s", dom)
	}
	typed := runChromium(t, browser, "--dump-dom", front.URL+"/metrics")
	if !strings.Contains(typed, "xet_http_requests_total") {
		t.Errorf("/metrics opened by a person: no counters:\n%s", typed)
	}
}
