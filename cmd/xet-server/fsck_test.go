package main

import (
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
