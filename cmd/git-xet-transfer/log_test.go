package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/agent/xetlog"
)

// log's arguments: flags anywhere before "--", revisions between them, paths after "--" (even a
// path named like a flag or a revision).
func TestParseLogFlags(t *testing.T) {
	for _, c := range []struct {
		args        []string
		json        bool
		remote      string
		revs, paths string
		ok          bool
	}{
		{nil, false, "origin", "[]", "[]", true},
		{[]string{"--json", "HEAD~3..HEAD", "--remote", "up", "v1", "--", "--json", "a b.bin"}, true, "up", "[HEAD~3..HEAD v1]", "[--json a b.bin]", true},
		{[]string{"--", "model.bin"}, false, "origin", "[]", "[model.bin]", true},
		{[]string{"main", "--jobs", "0"}, false, "origin", "[main]", "[]", false},
		{[]string{"--no-such-flag"}, false, "origin", "[]", "[]", false},
	} {
		var stderr bytes.Buffer
		f, ok := parseLogFlags(c.args, &stderr)
		if ok != c.ok || (ok && (f.json != c.json || f.remote != c.remote || fmt.Sprint(f.revs) != c.revs || fmt.Sprint(f.paths) != c.paths)) {
			t.Errorf("parseLogFlags(%q) = %+v, %v; want json %v remote %q revs %s paths %s ok %v\n%s", c.args, f, ok, c.json, c.remote, c.revs, c.paths, c.ok, stderr.String())
		}
	}
}

// The table: aligned columns, human sizes, "-" where a row has no byte counts, and a note saying
// what a row's numbers are not.
func TestLogTable(t *testing.T) {
	shared, fresh, saved := int64(64<<20-300<<10), int64(300<<10), 1-float64(300<<10)/float64(64<<20)
	recs := []xetlog.Record{
		{Commit: strings.Repeat("a", 40), Path: "model.bin", Size: 64 << 20, PrevPath: "old\nname.bin", PrevOid: "x", State: "xet",
			Shared: &shared, New: &fresh, Saved: &saved, PrevState: "xet"},
		{Commit: strings.Repeat("b", 40), Path: "new.bin", Size: 1000, State: "missing"},
	}
	var out bytes.Buffer
	if err := writeLogTable(&out, recs); err != nil {
		t.Fatal(err)
	}
	want := "COMMIT      PATH       SIZE      SHARED    NEW        SAVED   NOTE\n" +
		"aaaaaaaaaa  model.bin  64.0 MiB  63.7 MiB  300.0 KiB  99.5 %  from \"old\\nname.bin\"; estimated\n" +
		"bbbbbbbbbb  new.bin    1000 B    -         -          -       not on the remote (not pushed?); new path\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

// A cloned repository names its paths, and a remote's server writes the errors: the table shows
// them with no terminal escape (redact.Printable), on one row. Before the fix the path reached the
// output as "w\x1b]0;pwned\x07.bin" (a title change), the error's "\x1b[2J" as a screen clear.
func TestLogTableHidesTerminalEscapes(t *testing.T) {
	recs := []xetlog.Record{
		{Commit: strings.Repeat("a", 40), Path: "w\x1b]0;pwned\x07.bin", Size: 10, State: "error", Error: "server says \x1b[2Jgone"},
		{Commit: strings.Repeat("b", 40), Path: "tab\there.bin", Size: 10, State: "missing", PrevOid: "x", PrevPath: "old\x1b[31m.bin"},
	}
	var out bytes.Buffer
	if err := writeLogTable(&out, recs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "pwned") || !strings.Contains(out.String(), "gone") {
		t.Fatalf("the path or the error is not shown:\n%s", out.String())
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Errorf("a terminal escape reached the table:\n%q", out.String())
	}
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Errorf("%d lines, want 3 (a header and a row per record):\n%s", n, out.String())
	}
}
