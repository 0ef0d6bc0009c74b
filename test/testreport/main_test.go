package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// What a CI log must show: a failing test's output, a build failure, each package's result line
// and the slowest tests; what it must not: the output of tests that passed.
func TestReportShowsFailuresAndSlowestOnly(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p/a","Test":"TestOK"}`,
		`{"Action":"output","Package":"p/a","Test":"TestOK","Output":"    ok_test.go:9: chatter of a passing test\n"}`,
		`{"Action":"pass","Package":"p/a","Test":"TestOK","Elapsed":0.5}`,
		`{"Action":"run","Package":"p/a","Test":"TestBad"}`,
		`{"Action":"output","Package":"p/a","Test":"TestBad","Output":"    bad_test.go:3: want 2, got 3\n"}`,
		`{"Action":"fail","Package":"p/a","Test":"TestBad","Elapsed":7.25}`,
		`{"Action":"run","Package":"p/a","Test":"TestHung"}`,
		`{"Action":"output","Package":"p/a","Test":"TestHung","Output":"    hung_test.go:5: waiting for the server\n"}`,
		`{"Action":"output","Package":"p/a","Output":"FAIL\tp/a\t7.8s\n"}`,
		`{"Action":"fail","Package":"p/a","Elapsed":7.8}`,
		`{"ImportPath":"p/b","Action":"build-output","Output":"p/b/x.go:1:1: expected 'package'\n"}`,
		`{"ImportPath":"p/b","Action":"build-fail"}`,
		`{"Action":"output","Package":"p/c","Output":"PASS\n"}`,
		`{"Action":"output","Package":"p/c","Output":"ok  \tp/c\t0.1s\n"}`,
		`{"Action":"pass","Package":"p/c","Elapsed":0.1}`,
		`{"Action":"run","Package":"p/d","Test":"TestSlow"}`,
		`{"Action":"output","Package":"p/d","Test":"TestSlow","Output":"    slow_test.go:8: log of a test still running\n"}`,
		`{"Action":"output","Package":"p/d","Output":"panic: test timed out after 1m0s\n"}`,
		`{"Action":"output","Package":"p/d","Output":"running tests:\n"}`,
		`{"Action":"output","Package":"p/d","Output":"\tTestSlow (1m0s)\n"}`,
		`{"Action":"output","Package":"p/d","Output":"FAIL\tp/d\t60.1s\n"}`,
		`{"Action":"fail","Package":"p/d","Elapsed":60.1}`,
	}, "\n") + "\n"
	var out, kept bytes.Buffer
	failed, slow, fails := report(strings.NewReader(in), &out, &kept)
	printSlowest(&out, slow, 1)
	printFailures(&out, fails)
	got := out.String()
	// The end of the report names every failure and its reason, after the slowest tests: a CI page
	// that shows only the tail shows them.
	_, tail, ok := strings.Cut(got, "\nfailed (3):\n")
	if !ok || !strings.Contains(got[:strings.Index(got, "\nfailed (3):")], "slowest") {
		t.Fatalf("the report does not end with its 3 failures after the slowest tests:\n%s", got)
	}
	for _, want := range []string{"p/a.TestBad\n      bad_test.go:3: want 2, got 3\n", "p/b\n      the build failed",
		"p/d\n      panic: test timed out after 1m0s\n      running tests:\n      TestSlow (1m0s)\n"} {
		if !strings.Contains(tail, want) {
			t.Errorf("the failures at the end lack %q:\n%s", want, tail)
		}
	}
	if strings.Contains(tail, "TestOK") || strings.Contains(tail, "p/c") {
		t.Errorf("the failures at the end name what passed:\n%s", tail)
	}
	for _, want := range []string{"want 2, got 3", "waiting for the server", "FAIL\tp/a", "expected 'package'", "ok  \tp/c", "7.2 s  p/a.TestBad"} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"chatter of a passing test", "PASS\n"} {
		if strings.Contains(got, not) {
			t.Errorf("the report shows %q:\n%s", not, got)
		}
	}
	if !failed {
		t.Error("a failed test and build reported no failure")
	}
	if kept.String() != in {
		t.Error("-out did not keep every event as read")
	}
}

// A reason cut to its first bytes stays text a terminal and a CI page can show: the cut does not
// split a character (a message may quote a path or a server's words in any script).
func TestReasonCutKeepsWholeCharacters(t *testing.T) {
	long := "    x_test.go:1: " + strings.Repeat("a", 299-len("x_test.go:1: ")) + strings.Repeat("é", 10)
	r := reasons([]string{long + "\n"}, isTestReason)
	if len(r) != 1 {
		t.Fatalf("reasons: %q", r)
	}
	if !utf8.ValidString(r[0]) {
		t.Fatalf("the cut split a character: %q", r[0][len(r[0])-8:])
	}
	if !strings.HasSuffix(r[0], "a …") || len(r[0]) > 300+len(" …") {
		t.Fatalf("the cut is not where the 300th byte's whole character ends: %q", r[0][len(r[0])-8:])
	}
}
