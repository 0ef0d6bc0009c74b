package main

import (
	"bytes"
	"encoding/json"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"html"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pageAttrs is every value of attribute name in a page, unescaped.
func pageAttrs(page, name string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\s`+regexp.QuoteMeta(name)+`="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// The web view of a store the previous release wrote (no registration history): its repositories
// with the numbers of `xet-server stats --json`, and a repository's objects by oid with their
// sizes, the page saying that when they were registered and what each stored are not known.
func TestWebViewOfUpgradedStore(t *testing.T) {
	data := t.TempDir()
	copyDir(t, "testdata/store-v1/cas", filepath.Join(data, "cas"))
	addr, logs, stop := startServer(t, "--data", data)
	defer func() {
		if c := stop(); c != 0 {
			t.Errorf("exit %d: %s", c, logs.String())
		}
	}()
	var out, stderr bytes.Buffer
	if c := run([]string{"stats", "--json", data}, nil, &out, &stderr); c != 0 {
		t.Fatalf("stats: exit %d: %s", c, stderr.String())
	}
	var s statsOut
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	code, index := servertest.Get(t, "http://"+addr+"/ui/")
	if code != 200 || !slices.Equal(pageAttrs(index, "data-repo"), []string{"org/old", "org/other"}) {
		t.Fatalf("index: %d\n%s", code, index)
	}
	old := s.Repos["org/old"]
	want := []string{strconv.Itoa(old.Files), strconv.FormatUint(old.Logical, 10), strconv.FormatUint(old.Stored, 10), strconv.FormatFloat(old.Ratio, 'g', -1, 64)}
	code, page := servertest.Get(t, "http://"+addr+"/ui/repo?name=org/old")
	var got []string
	for _, a := range []string{"data-files", "data-logical", "data-stored", "data-ratio"} {
		got = append(got, strings.Join(pageAttrs(page, a), ","))
	}
	if code != 200 || !slices.Equal(got, want) {
		t.Fatalf("org/old shows %v, stats --json %v (%d)\n%s", got, want, code, page)
	}
	oids := pageAttrs(page, "data-oid")
	if !slices.Equal(oids, []string{"95159803e516f8cca09f29f3e62f69bc050a5edc77b1f7785c44ca12f9c633ac", "ec54991542359e1d822fcf9fcd781e3372d1d4ff2f6c537719f2548635552078"}) ||
		len(pageAttrs(page, "data-size")) != 2 || !strings.Contains(page, "registered before this server kept a history") || strings.Contains(page, `class="chart"`) {
		t.Fatalf("org/old's objects %v:\n%s", oids, page)
	}
}

// --ui=false leaves the web view out: /ui/ is not found.
func TestWebViewOff(t *testing.T) {
	addr, logs, stop := startServer(t, "--data", t.TempDir(), "--ui=false")
	code, body := servertest.Get(t, "http://"+addr+"/ui/")
	if c := stop(); c != 0 {
		t.Errorf("exit %d: %s", c, logs.String())
	}
	if code != 404 || strings.Contains(body, "<html") {
		t.Fatalf("/ui/ with --ui=false: %d %s", code, body)
	}
}
