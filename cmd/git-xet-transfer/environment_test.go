package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Every environment variable the command reads is in the README's Configuration table.
func TestEnvironmentDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Configuration\n")
	if !ok {
		t.Fatal("README.md has no Configuration section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var names []string
	readEnvironment(func(name string) string { names = append(names, name); return "" }, nil)
	if len(names) < 15 {
		t.Fatalf("read only %d variables: %v", len(names), names)
	}
	for _, n := range names {
		if !strings.Contains(section, "`"+n+"`") && !strings.Contains(section, "`"+n+"=") {
			t.Errorf("%s is read but not in the README's Configuration table", n)
		}
	}
}

// Values are parsed once, here; malformed ones are named and left at their defaults.
func TestReadEnvironment(t *testing.T) {
	vars := map[string]string{
		"GIT_XET_STALL_TIMEOUT": "30s", "GIT_XET_CONCURRENCY": "3", "GIT_XET_SHARE": "0", "GIT_XET_DIRECT_IO": "1",
		"HF_XET_SHARD_CACHE_SIZE_LIMIT": "1kb", "HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE": "1000",
		"HF_HOME": "/h", "HOME": "/u", "HF_ENDPOINT": "https://hub.example/",
	}
	e := readEnvironment(func(n string) string { return vars[n] }, nil)
	if e.StallTimeout != 30*time.Second || e.Concurrency != 3 || !e.NoShare || !e.DirectIO || e.CacheSizeLimit != 1000 ||
		e.CacheMaxEntries != 1000 || e.HFEndpoint != "https://hub.example" || len(e.Problems) != 0 {
		t.Fatalf("%+v", e)
	}
	o := e.clientOptions()
	if o.Cache.Root != "/h/xet" || o.Cache.SizeLimit != 1000 || o.StallTimeout != 30*time.Second {
		t.Fatalf("client options %+v", o)
	}
	bad := map[string]string{"GIT_XET_STALL_TIMEOUT": "soon", "GIT_XET_CONCURRENCY": "-2",
		"HF_XET_SHARD_CACHE_SIZE_LIMIT": "lots", "HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE": "0"}
	e = readEnvironment(func(n string) string { return bad[n] }, nil)
	if len(e.Problems) != 4 || e.StallTimeout != 0 || e.Concurrency != 0 || e.CacheSizeLimit != 0 || e.CacheMaxEntries != 0 {
		t.Fatalf("malformed values: %+v", e)
	}
	for n := range bad {
		if !strings.Contains(strings.Join(e.Problems, "\n"), n) {
			t.Errorf("no problem names %s: %q", n, e.Problems)
		}
	}
}
