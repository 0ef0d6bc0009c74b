package test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// The client side of the attack suite (issue 41): what a hostile repository, or the LFS server it
// names, can get out of a user who works in it.

// attackToken is the user's Hugging Face token in these tests: no request to a host that is not
// the Hub may carry it.
const attackToken = "hf_userTOKENmustStayWithTheHub0123"

// hostileServer is an LFS server a repository's .lfsconfig names: it records the Authorization
// header of every request and answers as its mode says:
//   - "refuse": everything 401, asking for credentials;
//   - "xet": a download batch with a xet action whose CAS token has expired (so that the agent
//     renews it at the action's href), everything else 401;
//   - "missing": a batch with an error for every object asked for, everything else 401.
//
// Its messages carry a terminal escape (clear the screen), which no output may show raw.
type hostileServer struct {
	url string
	// casURL, when set before the first request, is the X-Xet-Cas-Url of "xet" answers, whose
	// token is then valid for an hour (default: <url>/cas, with a token that has expired).
	casURL string

	mu    sync.Mutex
	seen  []string // "METHOD path"
	auths []string // "METHOD path: Authorization"
}

func startHostile(t *testing.T, mode string) *hostileServer {
	t.Helper()
	h := &hostileServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, r.Method+" "+r.URL.Path)
		if a := r.Header.Get("Authorization"); a != "" {
			h.auths = append(h.auths, r.Method+" "+r.URL.Path+": "+a)
		}
		h.mu.Unlock()
		batch := strings.HasSuffix(r.URL.Path, "/objects/batch")
		switch {
		case batch && mode == "xet":
			cas, exp := h.url+"/cas", "1"
			if h.casURL != "" {
				cas, exp = h.casURL, strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
			}
			w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
			fmt.Fprintf(w, `{"transfer":"xet","objects":[{"oid":"%s","size":%d,"actions":{"download":{"href":"%s/api/models/org/model/xet-write-token/main",`+
				`"header":{"X-Xet-Cas-Url":"%s","X-Xet-Access-Token":"hostileCAStoken","X-Xet-Token-Expiration":"%s","X-Xet-Session-Id":"s",`+
				`"X-Xet-Hash":"%s"}}}}]}`, hostileOid, hostileSize, h.url, cas, exp, strings.Repeat("ab", 32))
		case batch && mode == "missing":
			var req lfsbatch.Request
			json.NewDecoder(r.Body).Decode(&req)
			ans := lfsbatch.Response{Transfer: "basic"}
			for _, o := range req.Objects {
				ans.Objects = append(ans.Objects, lfsbatch.Result{OID: o.OID, Size: o.Size, Error: &lfsbatch.ObjectError{Code: 404, Message: "gone\x1b[2J"}})
			}
			w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
			json.NewEncoder(w).Encode(ans)
		default:
			w.Header().Set("LFS-Authenticate", `Basic realm="hostile"`)
			w.Header().Set("WWW-Authenticate", `Basic realm="hostile"`)
			http.Error(w, `{"message":"credentials needed\u001b[2J"}`, http.StatusUnauthorized)
		}
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// requests is every request the server got.
func (h *hostileServer) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

// carrying lists the requests whose Authorization carries secret, as a bearer token or inside
// HTTP Basic.
func (h *hostileServer) carrying(secret string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, a := range h.auths {
		_, v, _ := strings.Cut(a, ": ")
		text := v
		if b, ok := strings.CutPrefix(v, "Basic "); ok {
			if dec, err := base64.StdEncoding.DecodeString(b); err == nil {
				text = string(dec)
			}
		}
		if strings.Contains(text, secret) {
			out = append(out, a)
		}
	}
	return out
}

// The object the hostile repository's pointer names (not on this machine).
const (
	hostileOid  = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
	hostileSize = 12345
)

// hostileRepo is a work tree with a local bare origin whose committed .lfsconfig sends LFS to lfsURL,
// holding one pointer to an object this machine does not have.
func hostileRepo(t *testing.T, e *env, lfsURL string) (work string) {
	t.Helper()
	work, _ = e.localRepo(repoOpts{lfsURL: lfsURL})
	writeFile(t, filepath.Join(work, "weights.bin"), []byte(fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", hostileOid, hostileSize)))
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "a model from somewhere")
	return work
}

// Item 2: a repository's .lfsconfig names an LFS server that is not the Hub; with HF_TOKEN set,
// nothing the user runs in it sends the token there: not migrate fetching the objects it lacks,
// not the agent in Hub mode (which calls the batch API itself), not the agent in batch mode
// renewing a CAS token at the action's href. Each asks the server something (the test would see
// the token) and fails for want of a credential of that server.
func TestAttackHFTokenStaysWithTheHub(t *testing.T) {
	for _, c := range []struct {
		name string
		mode string // of the hostile server
		run  func(e *env, work, target string) (string, error)
	}{
		{"migrate", "refuse", func(e *env, work, target string) (string, error) {
			out, code := e.migrate(work, "--to", target)
			if code == 0 {
				return out, nil
			}
			return out, fmt.Errorf("exit %d", code)
		}},
		{"hub mode", "refuse", func(e *env, work, _ string) (string, error) {
			// The user routes network remotes to the agent in standalone mode (Hub mode).
			e.git("", "config", "--global", "lfs.standalonetransferagent", "xet")
			return e.gitErr(work, "lfs", "pull")
		}},
		{"batch mode", "xet", func(e *env, work, _ string) (string, error) { return e.gitErr(work, "lfs", "pull") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := startHostile(t, c.mode)
			e := newEnv(t)
			e.install()
			e.vars = append(e.vars, "HF_TOKEN="+attackToken)
			work := hostileRepo(t, e, h.url+"/org/model.git/info/lfs")
			target := filepath.Join(e.home, "target.git")
			e.bareRemote(target)
			out, err := c.run(e, work, target)
			if err == nil {
				t.Errorf("it succeeded against a server that refuses everything:\n%s", out)
			}
			if len(h.requests()) == 0 {
				t.Fatalf("the hostile server was asked nothing, so this test shows nothing:\n%s", out)
			}
			if got := h.carrying(attackToken); len(got) > 0 {
				t.Errorf("HF_TOKEN went to %s, which is not the Hub:\n%s", h.url, strings.Join(got, "\n"))
			}
			if strings.Contains(out, attackToken) {
				t.Errorf("the output shows the token:\n%s", out)
			}
		})
	}
}

// Item 8: the start-up agent hands the conversation it read (request lines, whose action headers
// may carry credentials) to git-xet-transfer when it replaces itself with it. Those bytes must be
// in no process's environment, where another process of the user reads them at any time
// (/proc/<pid>/environ keeps what the process started with, whatever it unsets), and in no file
// still open once git-xet-transfer has taken them: this test reads both while git-xet-transfer
// serves the request.
func TestAttackHandoverNotInEnvironment(t *testing.T) {
	needLinux(t)
	e := newEnv(t)
	e.install()
	work, _ := e.localRepo(repoOpts{})
	const secret = "Bearer handoverSECRETofTheAction0123"
	for _, pad := range []int{0, 40 << 10} { // small, and past the start-up agent's old inline limit
		cmd := e.cmd(work, filepath.Join(binDir, "git-xet-transfer-agent"))
		cmd.Env = append(cmd.Env, "GIT_XET_LOG_LEVEL=info") // debug hands over before reading anything
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(stdout)
		fmt.Fprintln(stdin, `{"event":"init","operation":"download","remote":"origin","concurrent":true,"concurrenttransfers":1}`)
		if l, err := lines.ReadString('\n'); err != nil || strings.TrimSpace(l) != "{}" {
			t.Fatalf("init answer %q, %v", l, err)
		}
		fmt.Fprintf(stdin, `{"event":"download","oid":"%s","size":5,"action":{"href":"http://127.0.0.1:1/x","header":{"Authorization":%q,"X-Pad":%q}}}`+"\n",
			hostileOid, secret, strings.Repeat("p", pad))
		// git-xet-transfer (the same process, replaced) has taken the hand-over once it answers.
		if l, err := lines.ReadString('\n'); err != nil || !strings.Contains(l, hostileOid) {
			t.Fatalf("download answer %q, %v", l, err)
		}
		pid := cmd.Process.Pid
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); filepath.Base(exe) != "git-xet-transfer" {
			t.Fatalf("process %d runs %s, not git-xet-transfer: no hand-over happened", pid, exe)
		}
		if where := secretInProcess(t, pid, secret); where != "" {
			t.Errorf("pad %d: the handed-over request line is readable in %s", pad, where)
		}
		fmt.Fprintln(stdin, `{"event":"terminate"}`)
		stdin.Close()
		cmd.Wait()
	}
}

// secretInProcess says where another process of the user finds secret in process pid: its
// environment (raw, or base64 after a "b64:" tag, or in a file a value names), or a regular file it
// holds open; "" for nowhere.
func secretInProcess(t *testing.T, pid int, secret string) string {
	t.Helper()
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(environ), "\x00") {
		if strings.Contains(kv, secret) {
			return "/proc/" + strconv.Itoa(pid) + "/environ"
		}
		if _, b64, ok := strings.Cut(kv, "b64:"); ok {
			if b, err := base64.StdEncoding.DecodeString(b64); err == nil && strings.Contains(string(b), secret) {
				return "/proc/" + strconv.Itoa(pid) + "/environ (base64)"
			}
		}
		if _, path, ok := strings.Cut(kv, "file:"); ok {
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), secret) {
				return path + ", named in /proc/" + strconv.Itoa(pid) + "/environ"
			}
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		p := fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), secret) {
			target, _ := os.Readlink(p)
			return p + " (" + target + ")"
		}
	}
	return ""
}

// Item 8: URLs with a password (https://user:password@host/...) or a signed query reach neither the
// agent's log at debug level (JSON lines, every field) nor its answers to git-lfs (which prints
// them): not the remote git-lfs names in init (`git push https://user:password@host/repo`), not a
// CAS URL or a refresh href a batch answer gives.
func TestAttackNoURLSecretsInAgentLog(t *testing.T) {
	e := newEnv(t)
	e.install()
	work, _ := e.localRepo(repoOpts{})
	// A token may be the whole user info (https://TOKEN@host/…, as Azure DevOps and GitHub take
	// them): TOKENasUSER.
	secrets := []string{"remotePASSWORD", "casPASSWORD", "hrefPASSWORD", "SIGNEDquery", "TOKENasUSER"}
	initWith := func(remote string) string {
		return `{"event":"init","operation":"download","remote":"` + remote + `","concurrent":true,"concurrenttransfers":1}`
	}
	h := startHostile(t, "refuse") // refuses everything at once, so that nothing waits on retries
	stdout, stderr := runAgent(t, e, work, []string{
		initWith(strings.Replace(h.url, "://", "://alice:remotePASSWORD@", 1) + "/org/repo.git?token=SIGNEDquery"),
		`{"event":"download","oid":"` + hostileOid + `","size":5,"action":null}`,
	})
	out1, err1 := runAgent(t, e, work, []string{
		initWith(strings.Replace(h.url, "://", "://ghp_TOKENasUSER@", 1) + "/org/repo.git"),
		`{"event":"download","oid":"` + hostileOid + `","size":5,"action":null}`,
	})
	out2, err2 := runAgent(t, e, work, []string{
		initWith("origin"),
		`{"event":"download","oid":"` + hostileOid + `","size":5,"action":{"href":"http://bob:hrefPASSWORD@127.0.0.1:1/refresh?sig=SIGNEDquery",` +
			`"header":{"X-Xet-Cas-Url":"http://carol:casPASSWORD@127.0.0.1:1/cas?sig=SIGNEDquery","X-Xet-Access-Token":"t","X-Xet-Token-Expiration":"1",` +
			`"X-Xet-Hash":"` + strings.Repeat("ab", 32) + `"}}}`,
	})
	log, err := os.ReadFile(e.log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), `"remote"`) || !strings.Contains(string(log), "transfer failed") {
		t.Fatalf("the log has no init line or no failed transfer, so this test shows nothing:\n%s", log)
	}
	for _, s := range secrets {
		for name, text := range map[string]string{"the agent log": string(log), "the answers and stderr": stdout + stderr + out1 + err1 + out2 + err2} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %s:\n%s", name, s, text)
			}
		}
	}
}

// A hostile repository's paths and its LFS server's messages may hold terminal escapes (git allows
// any byte but NUL and / in a path): migrate's report and errors show them quoted, as git does,
// never raw, so that they cannot rewrite what the user sees (or, on some terminals, set the
// clipboard).
func TestAttackNoTerminalEscapesFromTheRepository(t *testing.T) {
	h := startHostile(t, "missing")
	e := newEnv(t)
	work := hostileRepo(t, e, h.url+"/org/model.git/info/lfs")
	writeFile(t, filepath.Join(work, "w\x1b]0;pwned\x07\x1b[2J.bin"), []byte(fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize 7\n", strings.Repeat("cd", 32))))
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "escapes")
	target := filepath.Join(e.home, "target.git")
	e.bareRemote(target)
	var all strings.Builder
	for _, args := range [][]string{{"--dry-run"}, {"--to", target}} {
		out, _ := e.migrate(work, args...)
		all.WriteString(out)
	}
	if !strings.Contains(all.String(), "gone") || !strings.Contains(all.String(), "pwned") {
		t.Fatalf("neither the server's message nor the path was shown, so this test shows nothing:\n%q", all.String())
	}
	if strings.ContainsRune(all.String(), 0x1b) || strings.ContainsRune(all.String(), 0x07) {
		t.Errorf("a terminal escape reached the output:\n%q", all.String())
	}
}

// A hostile LFS server's xet action may name any host as its CAS (X-Xet-Cas-Url): that host gets the
// server's own CAS token, which is what the action is for, and none of the user's credentials, not
// HF_TOKEN and not the netrc entry the user keeps for that very host (git-lfs would not send it
// either: the request carries the action's authorization).
func TestAttackCASURLElsewhereGetsNoUserCredential(t *testing.T) {
	victim := startHostile(t, "refuse")
	h := startHostile(t, "xet")
	h.casURL = victim.url + "/v1"
	e := newEnv(t)
	e.install()
	e.vars = append(e.vars, "HF_TOKEN="+attackToken)
	writeFile(t, filepath.Join(e.home, ".netrc"), []byte("machine 127.0.0.1 login user password netrcPASSWORD\n"))
	work := hostileRepo(t, e, h.url+"/org/model.git/info/lfs")
	out, err := e.gitErr(work, "lfs", "pull")
	if err == nil {
		t.Fatalf("the pull succeeded:\n%s", out)
	}
	if len(victim.requests()) == 0 {
		t.Fatalf("the CAS host was asked nothing, so this test shows nothing:\n%s", out)
	}
	for _, secret := range []string{attackToken, "netrcPASSWORD"} {
		if got := victim.carrying(secret); len(got) > 0 {
			t.Errorf("the CAS host a batch answer named got the user's credential:\n%s", strings.Join(got, "\n"))
		}
	}
	if got := victim.carrying("hostileCAStoken"); len(got) == 0 {
		t.Errorf("the CAS host did not get the action's token: %v", victim.requests())
	}
}

// A committed .lfsconfig sets only what git-lfs lets it set (lfs.url and its kin): the agent takes
// none of its own settings from it, so a cloned repository cannot make the agent append its log to
// a file of the user's choosing (~/.bashrc), keep the objects in a store of its choosing, or add
// headers to the user's requests.
func TestAttackLfsconfigSetsNoAgentSetting(t *testing.T) {
	e := newEnv(t)
	var vars []string
	for _, kv := range e.vars {
		if !strings.HasPrefix(kv, "GIT_XET_LOG") { // the environment would win over any config
			vars = append(vars, kv)
		}
	}
	e.vars = vars
	e.install()
	work, remote := e.localRepo(repoOpts{})
	pwnedLog, pwnedStore := filepath.Join(e.home, "pwned.log"), filepath.Join(e.home, "pwned-store")
	writeFile(t, filepath.Join(work, ".lfsconfig"), []byte("[xet]\n\tlogfile = "+pwnedLog+"\n\tloglevel = debug\n\tstore = "+pwnedStore+
		"\n[http]\n\textraheader = X-Pwned: 1\n"))
	writeFile(t, filepath.Join(work, "a.bin"), []byte("some model bytes"))
	e.git(work, "add", ".")
	e.git(work, "commit", "-qm", "a")
	e.git(work, "push", "-q", "origin", "main")
	e.git("", "clone", "-q", remote, filepath.Join(e.home, "clone"))
	for _, p := range []string{pwnedLog, pwnedStore} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the repository's .lfsconfig made the agent write %s", p)
		}
	}
	if _, err := os.Stat(filepath.Join(remote, "xet")); err != nil {
		t.Errorf("the push did not go to the remote's own store: %v", err)
	}
}
