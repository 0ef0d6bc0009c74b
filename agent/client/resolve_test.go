package client

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

func TestResolveLocalRemote(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git missing")
		}
		t.Skip("git missing")
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	run := func(d string, args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", d}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run(dir, "init", "-q", "--bare", "remote.git")
	run(dir, "init", "-q", "nonbare")
	run(dir, "init", "-q", "work")
	work := filepath.Join(dir, "work")
	run(work, "remote", "add", "origin", "../remote.git")
	run(work, "remote", "add", "other", "file://"+filepath.Join(dir, "nonbare"))
	run(work, "remote", "add", "web", "https://user:secret@example.test/r.git")
	g := Git{Dir: work}
	ctx := context.Background()

	r, err := ResolveLocalRemote(ctx, g, "upload", "origin")
	if err != nil || r.RepoDir != filepath.Join(dir, "remote.git") || r.StoreDir() != filepath.Join(dir, "remote.git", "xet") {
		t.Errorf("origin: %+v, %v", r, err)
	}
	r, err = ResolveLocalRemote(ctx, g, "upload", "other")
	if err != nil || r.RepoDir != filepath.Join(dir, "nonbare", ".git") {
		t.Errorf("non-bare: %+v, %v", r, err)
	}
	r, err = ResolveLocalRemote(ctx, g, "upload", filepath.Join(dir, "remote.git")) // git push /path main
	if err != nil || r.RepoDir != filepath.Join(dir, "remote.git") {
		t.Errorf("path: %+v, %v", r, err)
	}
	_, err = ResolveLocalRemote(ctx, g, "upload", "web")
	if err == nil || !strings.Contains(err.Error(), "not on this machine") || strings.Contains(err.Error(), "secret") {
		t.Errorf("network remote: %v", err)
	}
	_, err = ResolveLocalRemote(ctx, g, "upload", "nosuch")
	if err == nil || !strings.Contains(err.Error(), `remote "nosuch"`) {
		t.Errorf("missing remote: %v", err)
	}
	// lfs.url wins over the remote's URL (a repository of its own: a process reads config once).
	run(dir, "clone", "-q", "remote.git", "work2")
	run(filepath.Join(dir, "work2"), "config", "lfs.url", "file://"+filepath.Join(dir, "nonbare"))
	r, err = ResolveLocalRemote(ctx, Git{Dir: filepath.Join(dir, "work2")}, "upload", "origin")
	if err != nil || r.RepoDir != filepath.Join(dir, "nonbare", ".git") {
		t.Errorf("lfs.url wins: %+v, %v", r, err)
	}
}

func TestParseBatchAction(t *testing.T) {
	a := &lfsbatch.Action{Href: "http://127.0.0.1/refresh", Header: map[string]string{
		"x-xet-cas-url":          "http://127.0.0.1:1234",
		"X-Xet-Access-Token":     "tok",
		"X-Xet-Token-Expiration": "1900000000",
		"X-Xet-Session-Id":       "sess",
		"Authorization":          "Basic abc",
	}}
	b, err := parseBatchAction(a)
	if err != nil {
		t.Fatal(err)
	}
	if b.CasURL != "http://127.0.0.1:1234" || b.Token != "tok" || b.Exp.Unix() != 1900000000 || b.SessionID != "sess" ||
		len(b.Auth) != 1 || b.Auth["Authorization"] != "Basic abc" || b.VerifiesSHA256 {
		t.Errorf("parsed %+v", b)
	}
	// Only an explicit "true" lets uploads skip hashing the file.
	for v, want := range map[string]bool{"true": true, "True": true, "1": false, "false": false, "": false} {
		a.Header["x-xet-verifies-sha256"] = v
		if b, err := parseBatchAction(a); err != nil || b.VerifiesSHA256 != want {
			t.Errorf("X-Xet-Verifies-Sha256 %q: VerifiesSHA256 %v (%v), want %v", v, b != nil && b.VerifiesSHA256, err, want)
		}
	}
	for name, h := range map[string]map[string]string{
		"no cas url": {"X-Xet-Access-Token": "t"},
		"bad cas":    {"X-Xet-Cas-Url": "ftp://x"},
		"bad exp":    {"X-Xet-Cas-Url": "http://127.0.0.1", "X-Xet-Token-Expiration": "soon"},
	} {
		if _, err := parseBatchAction(&lfsbatch.Action{Header: h}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTune(t *testing.T) {
	if got := Tune(2, 8, 0); got != (Tuning{Procs: 1, Upload: 1, Download: 2, UploadMax: 4, DownloadMax: 32}) {
		t.Errorf("2 cores, 8 workers: %+v", got)
	}
	if got := Tune(2, 1, 0); got != (Tuning{Procs: 2, Upload: 4, Download: 8, UploadMax: 4, DownloadMax: 32}) {
		t.Errorf("2 cores, 1 worker: %+v", got)
	}
	if got := Tune(16, 8, 0); got != (Tuning{Procs: 4, Upload: 4, Download: 8, UploadMax: 4, DownloadMax: 32}) {
		t.Errorf("16 cores, 8 workers: %+v", got)
	}
	if got := Tune(64, 1, 0); got != (Tuning{Procs: 64, Upload: 128, Download: 256, UploadMax: 128, DownloadMax: 256}) {
		t.Errorf("64 cores, 1 worker: %+v", got)
	}
	if got := Tune(2, 8, 5); got != (Tuning{Procs: 1, Upload: 5, Download: 5, UploadMax: 5, DownloadMax: 5}) {
		t.Errorf("2 cores, 8 workers, concurrency 5: %+v", got)
	}
	// The network's controllers start modest, within the ceiling.
	for _, tc := range []struct {
		t                  Tuning
		upStart, downStart int
		upMax, downMax     int
	}{
		{Tune(2, 8, 0), AdaptUploadStart, AdaptDownloadStart, 4, 32},
		{Tune(16, 1, 0), 2 * AdaptUploadStart, 2 * AdaptDownloadStart, 32, 64},
		{Tune(2, 8, 1), 1, 1, 1, 1},
	} {
		up, down := tc.t.adaptive()
		if up.Limit() != tc.upStart || down.Limit() != tc.downStart || up.Max() != tc.upMax || down.Max() != tc.downMax {
			t.Errorf("%+v: uploads start %d ceiling %d, downloads %d %d; want %d %d, %d %d", tc.t, up.Limit(), up.Max(), down.Limit(), down.Max(),
				tc.upStart, tc.upMax, tc.downStart, tc.downMax)
		}
	}
}
