package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// copyDir copies the files under src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// lfsGet downloads an object through the basic-transfer route and returns its SHA-256.
func lfsGet(t *testing.T, addr, repo, oid string) string {
	t.Helper()
	res, err := http.Get("http://" + addr + "/" + repo + ".git/info/lfs/objects/" + oid)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s %s: %d %s", repo, oid, res.StatusCode, b)
	}
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

// lfsPut uploads an object through the basic-transfer route and returns its oid and the status.
func lfsPut(t *testing.T, addr, repo string, body []byte) (string, int, string) {
	t.Helper()
	d := sha256.Sum256(body)
	oid := hex.EncodeToString(d[:])
	req, _ := http.NewRequest("PUT", "http://"+addr+"/"+repo+".git/info/lfs/objects/"+oid, bytes.NewReader(body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(res.Body)
	return oid, res.StatusCode, string(msg)
}

// A store written by the previous release (testdata/store-v1: no format version) opens, serves
// its files, takes new uploads, and is then recorded as this release's format.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	data := t.TempDir()
	copyDir(t, "testdata/store-v1/cas", filepath.Join(data, "cas"))
	addr, logs, stop := startServer(t, "--data", data)
	for _, o := range []struct{ repo, oid string }{
		{"org/old", "ec54991542359e1d822fcf9fcd781e3372d1d4ff2f6c537719f2548635552078"},
		{"org/old", "95159803e516f8cca09f29f3e62f69bc050a5edc77b1f7785c44ca12f9c633ac"},
		{"org/other", "7d408e3f17e8b62480e343b979d46dc669ec181e3db2421a14ce3da0f2b89b95"},
		{"org/other", "ec54991542359e1d822fcf9fcd781e3372d1d4ff2f6c537719f2548635552078"},
	} {
		if got := lfsGet(t, addr, o.repo, o.oid); got != o.oid {
			t.Fatalf("%s %s: downloaded content hashes to %s", o.repo, o.oid, got)
		}
	}
	upgradedIsolation(t, addr)
	body := testutil.RandomBytes(5000, 36)
	oid, code, msg := lfsPut(t, addr, "org/old", body)
	if code != 200 {
		t.Fatalf("new upload to the old store: %d %s", code, msg)
	}
	if got := lfsGet(t, addr, "org/old", oid); got != oid {
		t.Fatal("the new upload does not read back")
	}
	if c := stop(); c != 0 {
		t.Fatalf("exit %d: %s", c, logs.String())
	}
	st, err := store.Open(filepath.Join(data, "cas"), store.Options{})
	if err != nil || st.Format() != store.FormatVersion {
		t.Fatalf("after the upgrade the store is format %d (%v), want %d", st.Format(), err, store.FormatVersion)
	}
	st.Close()
	var out, stderr bytes.Buffer
	if c := run([]string{"fsck", data}, nil, &out, &stderr); c != 0 {
		t.Fatalf("fsck after the upgrade: %d %s %s", c, out.String(), stderr.String())
	}
}

// upgradedIsolation checks what the upgrade recorded for the previous release's registrations:
// org/old reads its file through the CAS routes and may name the file's xorb in a new shard;
// org/other, which never registered that file, may do neither.
func upgradedIsolation(t *testing.T, addr string) {
	t.Helper()
	const oid = "95159803e516f8cca09f29f3e62f69bc050a5edc77b1f7785c44ca12f9c633ac" // org/old's only
	lfs := func(repo string) string { return "http://" + addr + "/" + repo + ".git/info/lfs" }
	down := servertest.XetAction(t, lfs("org/old"), "download", lfsbatch.Object{OID: oid, Size: 1})
	old, file := servertest.CASToken(down), down.Header[lfsbatch.HeaderXetHash]
	other := servertest.CASToken(servertest.XetAction(t, lfs("org/other"), "upload", lfsbatch.Object{OID: oid, Size: 1}))
	base := "http://" + addr
	if code, _ := casDo(t, "GET", base+"/v2/reconstructions/"+file, old, nil); code != 200 {
		t.Fatalf("org/old reconstructing its file after the upgrade: %d", code)
	}
	for _, path := range []string{"/v2/reconstructions/" + file, "/v1/reconstructions/" + file} {
		if code, _ := casDo(t, "GET", base+path, other, nil); code != 404 {
			t.Errorf("org/other: GET %s: %d", path, code)
		}
	}
	if code, _ := casDo(t, "HEAD", base+"/v1/files/"+file, other, nil); code != 404 {
		t.Errorf("org/other: HEAD of org/old's file: %d", code)
	}
}

func casDo(t *testing.T, method, url, tok string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// A store of a newer format than this release reads is refused, naming both versions.
func TestRefusesNewerStoreFormat(t *testing.T) {
	data := t.TempDir()
	copyDir(t, "testdata/store-v1/cas", filepath.Join(data, "cas"))
	if err := os.WriteFile(filepath.Join(data, "cas", "format"), []byte("xet-store-format 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run([]string{"--listen", "127.0.0.1:0", "--data", data}, nil, &bytes.Buffer{}, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "format version 9") || !strings.Contains(stderr.String(), "versions 1 to 3") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// stats on the previous release's store: per repository, a file shared by two repositories counts
// in each; the whole store counts it once.
func TestStats(t *testing.T) {
	data := t.TempDir()
	copyDir(t, "testdata/store-v1/cas", filepath.Join(data, "cas"))
	var out, stderr bytes.Buffer
	if c := run([]string{"stats", "--json", data}, nil, &out, &stderr); c != 0 {
		t.Fatalf("exit %d: %s", c, stderr.String())
	}
	var s statsOut
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	old, other := s.Repos["org/old"], s.Repos["org/other"]
	if old.Files != 2 || old.Logical != 6000 || other.Files != 2 || other.Logical != 3018 {
		t.Fatalf("per repository: %+v %+v", old, other)
	}
	if s.Total.Files != 3 || s.Total.Logical != 6018 || s.Xorbs == 0 || s.XorbBytes == 0 || s.Total.Ratio < 0.99 {
		t.Fatalf("totals: %+v", s)
	}
	out.Reset()
	if c := run([]string{"stats", data}, nil, &out, &stderr); c != 0 {
		t.Fatalf("exit %d: %s", c, stderr.String())
	}
	for _, want := range []string{"org/old", "org/other", "(all)", "store format 3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
