package server

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"10GiB": 10 << 30, "1.5 MiB": 3 << 19, "512": 512, "2kb": 2000, "3TB": 3e12, "7 b": 7, "1KIB": 1024} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "GiB", "-1GiB", "ten", "1e30", "1 PiB", "NaN"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	if got := formatSize(10 << 30); got != "10 GiB" {
		t.Errorf("formatSize: %q", got)
	}
}

func TestParseQuotas(t *testing.T) {
	q, err := ParseQuotas(strings.NewReader("# team\norg/datasets-* 200GiB\n\norg/scratch none\n*/* 10GiB\nuser:alice 50GiB\n"))
	if err != nil {
		t.Fatal(err)
	}
	q.Default = 1 << 30
	if q.ownerLimit("alice") != 50<<30 || q.ownerLimit("bob") != 0 {
		t.Errorf("owner limits: %+v", q.Owners)
	}
	for ns, want := range map[string]int64{"org/datasets-a": 200 << 30, "org/scratch": 0, "org/x": 10 << 30, "single": 1 << 30} {
		if got := q.Limit(ns); got != want {
			t.Errorf("Limit(%q) = %d, want %d", ns, got, want)
		}
	}
	for _, bad := range []string{"org/x", "org/x 10GiB extra", "[ 1GiB", "org/x lots", "user: 1GiB", "user:a/b 1GiB"} {
		if _, err := ParseQuotas(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// ParseQuotas never panics, and every rule it returns has a valid pattern and a size of zero or
// more.
func FuzzParseQuotas(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) {
		q, err := ParseQuotas(strings.NewReader(text))
		if err != nil {
			return
		}
		for _, r := range append(q.Repos, q.Owners...) {
			if r.Bytes < 0 {
				t.Fatalf("%q: negative size %d", text, r.Bytes)
			}
		}
		q.Limit("org/x")
	})
}
