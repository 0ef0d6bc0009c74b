package gitrepo

import (
	"context"
	"os/exec"
	"testing"
)

// The agent reads its settings in one git call: keys come back lowercased with their last value,
// and nothing set is an empty map, not an error.
func TestConfigMatching(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	g := Git{Dir: dir}
	ctx := context.Background()
	re := `^xet\.(loglevel|logfile|store)$`
	m, err := g.ConfigMatching(ctx, re)
	if err != nil || len(m) != 0 {
		t.Fatalf("nothing set: %v, %v", m, err)
	}
	for _, kv := range [][2]string{{"xet.logLevel", "info"}, {"xet.loglevel", "debug"}, {"xet.store", "/srv/a b"}, {"xet.other", "x"}} {
		if _, err := g.Run(ctx, "config", "--add", kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	m, err = g.ConfigMatching(ctx, re)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["xet.loglevel"] != "debug" || m["xet.store"] != "/srv/a b" {
		t.Fatalf("got %q, want the last loglevel and the store path with its space", m)
	}
}
