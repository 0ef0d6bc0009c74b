package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, root, rel, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A tree whose links all resolve passes; each kind of broken link is named with its file and line.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	write(t, root, "README.md", strings.Join([]string{
		"# Tool",
		"## Running `xet-server` for a team",
		"## Flags",
		"## Flags",
		"See [team](#running-xet-server-for-a-team), [flags again](#flags-1), [server](docs/server.md#web-view),",
		"[the tests](test/), [a site](https://example.com/x#y), ![pic](docs/pic.png) and [dir](docs).",
		"```sh",
		"[not a link](nowhere.md)",
		"```",
		"`[code span](nowhere.md)`",
		"[ref]: docs/server.md",
	}, "\n")+"\n")
	write(t, root, "docs/server.md", "# Operating xet-server\n## Web view\n<a name=\"custom\"></a>\nBack to [the README](../README.md#flags), [custom](#custom), [Ünïcode](#übersicht).\n## Übersicht\n")
	write(t, root, "docs/pic.png", "")
	write(t, root, "test/x.sh", "")
	got, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("a tree whose links resolve: %q", got)
	}

	write(t, root, "docs/history/log.md", "# Log\n[gone](../gone.md), [bad anchor](../server.md#flags), [own](#nope), [up](../../../etc/passwd)\n")
	got, err = check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`docs/history/log.md:2: link "#nope": docs/history/log.md has no heading with the id "nope"`,
		`docs/history/log.md:2: link "../../../etc/passwd" leaves the repository`,
		`docs/history/log.md:2: link "../gone.md": docs/gone.md does not exist`,
		`docs/history/log.md:2: link "../server.md#flags": docs/server.md has no heading with the id "flags"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The README is held to its line budget.
func TestReadmeBudget(t *testing.T) {
	root := t.TempDir()
	write(t, root, "README.md", strings.Repeat("line\n", maxReadmeLines))
	if got, _ := check(root); len(got) != 0 {
		t.Fatalf("%d lines: %q", maxReadmeLines, got)
	}
	write(t, root, "README.md", strings.Repeat("line\n", maxReadmeLines+1))
	if got, _ := check(root); len(got) != 1 || !strings.Contains(got[0], "451 lines") {
		t.Fatalf("%d lines: %q", maxReadmeLines+1, got)
	}
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Running `xet-server` for a team":        "running-xet-server-for-a-team",
		"On emulated links (`test/netbench.sh`)": "on-emulated-links-testnetbenchsh",
		"The Hugging Face Hub":                   "the-hugging-face-hub",
		"Message → cause → fix":                  "message--cause--fix",
		"[Linked](x.md) heading":                 "linked-heading",
		"snake_case and 1.2.3":                   "snake_case-and-123",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}
