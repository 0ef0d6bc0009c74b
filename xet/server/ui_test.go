package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// uiEnv is a server with the web view on, and users (none: open).
func uiEnv(t *testing.T, users string, mod func(*Config)) *env {
	t.Helper()
	return newEnv(t, func(c *Config) {
		c.UI = true
		if users != "" {
			c.Users = mustUsers(t, users)
		}
		if mod != nil {
			mod(c)
		}
	})
}

// fill registers n small files of size bytes in repository ns, batch files to a shard, as
// user, and returns their oids in the order registered.
func (e *env) fill(ns, user string, n, size, batch int, seed uint64) []string {
	e.t.Helper()
	ctx := context.Background()
	a := store.Access{Repo: ns, User: user}
	var oids []string
	for _, b := range testutil.SmallFiles(n, size, batch, seed) {
		if _, err := e.st.PutXorbAs(ctx, a, b.Xorb, bytes.NewReader(b.Body), xorb.Follows{}); err != nil {
			e.t.Fatal(err)
		}
		if _, err := e.st.PutShardAs(ctx, a, b.Shard); err != nil {
			e.t.Fatal(err)
		}
		for _, s := range b.SHA256 {
			oids = append(oids, hash.FromSHA256(s).String())
		}
	}
	return oids
}

// attrs is every value of attribute name in a page, unescaped, in order.
func attrs(body []byte, name string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\s`+regexp.QuoteMeta(name)+`="([^"]*)"`).FindAllSubmatch(body, -1) {
		out = append(out, html.UnescapeString(string(m[1])))
	}
	return out
}

// checkUIHeaders fails unless res carries the web view's headers: no caching, no script.
func checkUIHeaders(t *testing.T, what string, res resp) {
	t.Helper()
	csp := res.header.Get("Content-Security-Policy")
	if res.header.Get("Cache-Control") != "no-store" || !strings.Contains(csp, "default-src 'none'") ||
		strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe") || res.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: headers %v", what, res.header)
	}
	if bytes.Contains(bytes.ToLower(res.body), []byte("<script")) {
		t.Errorf("%s: a script in the page", what)
	}
}

const carolPW = "carol-password-0"

func uiUsers() string {
	return servertest.UserLine("alice", alicePW, ":write:alice/*") + servertest.UserLine("bob", bobPW, ":write:bob/*") + servertest.UserLine("carol", carolPW, ":read")
}

// The view takes the users file's Basic credentials and nothing else; a user sees the
// repositories they may read, with the numbers of `xet-server stats`, and another's repository
// is not found exactly as one that does not exist, naming neither.
func TestUIAuthAndIsolation(t *testing.T) {
	e := uiEnv(t, uiUsers(), nil)
	e.fill("alice/model", "alice", 3, 3000, 3, 1)
	e.fill("bob/secret-data", "bob", 2, 7777, 2, 50)
	for _, c := range []struct {
		what string
		hdr  []string
	}{
		{"no credentials", nil},
		{"a wrong password", servertest.Basic("bob", "wrong")}, // not alice: her login would wait out the limit on failures
		{"an unknown user", servertest.Basic("mallory", alicePW)},
		{"a CAS token of alice's repository", servertest.Bearer(e.token("alice", "alice/model", scopeRead, time.Hour))},
	} {
		res := e.do("GET", "/ui/", nil, c.hdr...)
		if res.status != http.StatusUnauthorized || !strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Basic ") ||
			bytes.Contains(res.body, []byte("alice/model")) {
			t.Errorf("%s: %v %v", c.what, res, res.header)
		}
		checkUIHeaders(t, c.what, res)
	}

	res := e.do("GET", "/ui/", nil, servertest.Basic("alice", alicePW)...)
	checkUIHeaders(t, "alice's index", res)
	if res.status != 200 || strings.Join(attrs(res.body, "data-repo"), ",") != "alice/model" || bytes.Contains(res.body, []byte("bob")) ||
		bytes.Contains(res.body, []byte("7777")) || bytes.Contains(res.body, []byte("15554")) {
		t.Fatalf("alice's index:\n%s", res.body)
	}
	st, err := store.NewMaint(e.st).Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	u := st.Repos["alice/model"]
	if got := attrs(res.body, "data-files")[0] + " " + attrs(res.body, "data-logical")[0] + " " + attrs(res.body, "data-stored")[0]; got != strconv.Itoa(u.Files)+" "+strconv.FormatUint(u.Logical, 10)+" "+strconv.FormatUint(u.Stored, 10) {
		t.Errorf("alice/model on the page: %s; stats: %+v", got, u)
	}

	theirs := e.do("GET", "/ui/repo?name=bob/secret-data", nil, servertest.Basic("alice", alicePW)...)
	none := e.do("GET", "/ui/repo?name=alice/nothing", nil, servertest.Basic("alice", alicePW)...)
	if theirs.status != 404 || none.status != 404 || !bytes.Equal(theirs.body, none.body) || bytes.Contains(theirs.body, []byte("bob")) {
		t.Fatalf("bob's repository for alice: %v\na repository that does not exist: %v", theirs, none)
	}
	checkUIHeaders(t, "404", theirs)

	carol := e.do("GET", "/ui/", nil, servertest.Basic("carol", carolPW)...)
	if got := strings.Join(attrs(carol.body, "data-repo"), ","); carol.status != 200 || got != "alice/model,bob/secret-data" {
		t.Fatalf("carol (reads every repository): %d %s", carol.status, got)
	}
	mine := e.do("GET", "/ui/repo?name=alice/model", nil, servertest.Basic("alice", alicePW)...)
	if mine.status != 200 || len(attrs(mine.body, "data-oid")) != 3 {
		t.Fatalf("alice's repository page: %v", mine)
	}
	cred := servertest.Basic("alice", alicePW)[1]
	for _, page := range [][]byte{res.body, mine.body, theirs.body} {
		for _, href := range attrs(page, "href") {
			if !strings.HasPrefix(href, "/ui/") {
				t.Errorf("a link out of the view: %q", href)
			}
		}
		if bytes.Contains(page, []byte(alicePW)) || bytes.Contains(page, []byte(cred[len("Basic "):])) {
			t.Errorf("a page holds alice's credentials:\n%s", page)
		}
	}
}

// With the view off (--ui=false) /ui/ is not a route.
func TestUIOff(t *testing.T) {
	e := newEnv(t, nil)
	e.fill("org/a", "", 1, 1000, 1, 1)
	for _, p := range []string{"/ui/", "/ui/repo?name=org/a", "/ui"} {
		if res := e.do("GET", p, nil); res.status != 404 || bytes.Contains(res.body, []byte("org/a")) {
			t.Errorf("GET %s with the view off: %v", p, res)
		}
	}
	if res := uiEnv(t, "", nil).do("GET", "/ui/", nil); res.status != 200 {
		t.Fatalf("with the view on: %v", res)
	}
}

// Repository names are shown as text and passed as a query value, whatever they hold; a history
// record of a hostile name is not one.
func TestUIEscapesHostileNames(t *testing.T) {
	e := uiEnv(t, "", nil)
	hostile := []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, `a&b/c?d=e#f`, `javascript:alert(1)`, "x\xff\x00y"}
	for i, ns := range hostile {
		e.fill(ns, "", 1, 1000+i, 1, uint64(10+i))
	}
	bad := "ns/n" + base64.RawURLEncoding.EncodeToString([]byte(hostile[0])) + "/reg/<img src=x onerror=alert(2)>"
	if _, err := e.st.Backend().Create(context.Background(), bad, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	res := e.do("GET", "/ui/", nil)
	checkUIHeaders(t, "index", res)
	for _, raw := range []string{"<script>alert", "<img", "onerror=alert(1)>", `href="javascript`} {
		if bytes.Contains(res.body, []byte(raw)) {
			t.Fatalf("the index holds %q:\n%s", raw, res.body)
		}
	}
	links := regexp.MustCompile(`href="(/ui/repo\?name=[^"]*)"`).FindAllSubmatch(res.body, -1)
	if len(links) != len(hostile) {
		t.Fatalf("%d repository links, want %d:\n%s", len(links), len(hostile), res.body)
	}
	for _, l := range links {
		page := e.do("GET", html.UnescapeString(string(l[1])), nil)
		checkUIHeaders(t, string(l[1]), page)
		if page.status != 200 || len(attrs(page.body, "data-oid")) != 1 || bytes.Contains(page.body, []byte("<img")) {
			t.Fatalf("GET %s: %v", l[1], page)
		}
	}
	if !bytes.Contains(res.body, []byte("&lt;script&gt;alert(1)&lt;/script&gt;")) {
		t.Fatalf("the script-like name is not shown as text:\n%s", res.body)
	}
}

// A repository's objects are listed in the order they were registered, a page at a time; a page
// past the last is not found and a page that is not a number a bad request.
func TestUIPaging(t *testing.T) {
	e := uiEnv(t, "", nil)
	var oids []string
	for i, n := range []int{100, 100, 50} {
		oids = append(oids, e.fill("org/many", "", n, 2000, n, uint64(1000*i+1))...)
	}
	for page, want := range map[int][]string{1: oids[:100], 3: oids[200:]} {
		res := e.do("GET", "/ui/repo?name=org/many&page="+strconv.Itoa(page), nil)
		if got := attrs(res.body, "data-oid"); res.status != 200 || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("page %d: %d, %d objects, want %d in registration order", page, res.status, len(got), len(want))
		}
		if next := bytes.Contains(res.body, []byte("next →")); next != (page == 1) {
			t.Errorf("page %d: a next link %v", page, next)
		}
	}
	if res := e.do("GET", "/ui/repo?name=org/many", nil); !strings.HasPrefix(strings.Join(attrs(res.body, "data-oid"), ","), oids[0]) {
		t.Fatalf("no page: %v", res)
	}
	if res := e.do("GET", "/ui/repo?name=org/many&page=4", nil); res.status != 404 {
		t.Fatalf("page 4 of 3: %v", res)
	}
	for _, p := range []string{"0", "-1", "x", "99999999999999999999", "1e3"} {
		if res := e.do("GET", "/ui/repo?name=org/many&page="+p, nil); res.status != 400 {
			t.Errorf("page %s: %v", p, res)
		}
	}
}

// Quotas: a repository's limit and use for anyone who reads it; its owner's limit too, but the
// owner's use (a sum over repositories) only for a viewer who may read every repository.
func TestUIQuotas(t *testing.T) {
	q := &Quotas{Default: 1 << 20, Owners: []QuotaRule{{Pattern: "alice", Bytes: 4 << 20}}}
	e := uiEnv(t, uiUsers(), func(c *Config) { c.Quotas = q })
	e.fill("alice/model", "alice", 2, 3000, 2, 1)
	e.fill("alice/hidden", "", 1, 9000, 1, 7)
	a := e.do("GET", "/ui/repo?name=alice/model", nil, servertest.Basic("alice", alicePW)...)
	if used, limit := attrs(a.body, "data-quota-used"), attrs(a.body, "data-quota-limit"); a.status != 200 ||
		strings.Join(used, ",") != "6000" || strings.Join(limit, ",") != "1048576" || !bytes.Contains(a.body, []byte("4.0 MiB")) {
		t.Fatalf("alice's page: quota used %v of %v\n%s", used, limit, a.body)
	}
	c := e.do("GET", "/ui/repo?name=alice/model", nil, servertest.Basic("carol", carolPW)...)
	if used := attrs(c.body, "data-quota-used"); strings.Join(used, ",") != "6000,15000" {
		t.Fatalf("carol's view of alice/model: quota use %v, want the repository's 6000 and alice's 15000", used)
	}
}
