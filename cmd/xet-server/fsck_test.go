package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

func TestFsckCommand(t *testing.T) {
	data := t.TempDir()
	if _, err := store.Open(filepath.Join(data, "cas"), store.Options{}); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if code := run([]string{"fsck", data}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "no problems") {
		t.Fatalf("clean store: %d %s %s", code, out.String(), errb.String())
	}
	os.MkdirAll(filepath.Join(data, "cas", "xorbs", "zz"), 0o755)
	os.WriteFile(filepath.Join(data, "cas", "xorbs", "zz", "half-written"), []byte("x"), 0o644)
	out.Reset()
	if code := run([]string{"fsck", data}, nil, &out, &errb); code != 1 || !strings.Contains(out.String(), "xorbs/zz/half-written") {
		t.Fatalf("damaged store: %d %s", code, out.String())
	}
	if code := run([]string{"fsck"}, nil, &out, &errb); code != 2 {
		t.Errorf("no directory: exit %d", code)
	}
}

// gc on a data directory: a report; a grace period a registration could outlast is refused with
// the reason; bad usage is exit 2.
func TestGCCommand(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "cas"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"gc", "--dry-run", dir}, nil, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "0 xorbs") || !strings.Contains(stdout.String(), "dry run") {
		t.Fatalf("gc --dry-run: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"gc", "--grace", "1m", dir}, nil, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "registration") {
		t.Fatalf("gc --grace 1m: exit %d\n%s", code, stderr.String())
	}
	for _, args := range [][]string{{"gc"}, {"gc", dir, dir}, {"gc", "--storage", "s3://b/p", dir}} {
		if code := run(args, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code := run([]string{"gc", filepath.Join(dir, "missing")}, nil, &bytes.Buffer{}, &stderr); code != 1 {
		t.Errorf("gc of a missing directory: exit %d", code)
	}
}

// The maintenance commands read a store; they never make one. A data directory that holds no store
// (a mistyped path, a server that never ran there) is said to be one, as fsck says it, and left as
// it was: before the fix `stats` printed an empty table and `gc --dry-run` "0 xorbs", exit 0 both,
// having written DIR/cas (a pack and the format blob) into it, and `--storage DIR/cas` the same.
func TestMaintenanceCommandsCreateNoStore(t *testing.T) {
	for _, args := range [][]string{{"stats"}, {"stats", "--json"}, {"gc", "--dry-run"}, {"gc"}} {
		for _, storage := range []bool{false, true} {
			dir := t.TempDir()
			full := append(append([]string{}, args...), dir)
			if storage {
				full = append(append([]string{}, args...), "--storage", filepath.Join(dir, "cas"))
			}
			var stdout, stderr bytes.Buffer
			code := run(full, nil, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), "no Xet store at") {
				t.Errorf("%v: exit %d, want 1 naming the missing store\n%s%s", full, code, stdout.String(), stderr.String())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%v wrote %d entries into the directory, the first %s", full, len(entries), entries[0].Name())
			}
		}
	}
}
