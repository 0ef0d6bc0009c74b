// Command testreport reads `go test -json` on stdin and prints what `go test` without -v would: the
// output of the packages and of the tests that failed, and each package's result line. At the end
// it prints the slowest tests, so that a CI run shows where its time went (the end-to-end package
// takes most of it, and a test that grows slower is seen before the package's -timeout is hit), and
// last the tests and packages that failed with their failure messages: a reader of only the tail of
// a CI log learns which test failed and why, not only the slowest list.
// With -out FILE it also keeps every event there.
//
//	go test -json ./... | go run ./test/testreport -top 20 -out test.json
//
// Its exit status is 1 when a test or package failed, or when a package's build failed, so a
// pipeline with pipefail fails as go test would.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"unicode/utf8"
)

// event is a test2json event (go doc test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build events name the package here
	Test       string
	Elapsed    float64
	Output     string
}

// failure is a test or package that failed, and the lines that say why: a test's messages
// (file.go:N: ...), a package's panic or timeout.
type failure struct {
	name  string
	lines []string
}

type timing struct {
	name    string
	elapsed float64
}

func main() {
	top := flag.Int("top", 20, "how many of the slowest tests to print")
	out := flag.String("out", "", "also write every event to this file")
	flag.Parse()
	var keep io.Writer = io.Discard
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		keep = f
	}
	failed, slow, fails := report(os.Stdin, os.Stdout, keep)
	printSlowest(os.Stdout, slow, *top)
	printFailures(os.Stdout, fails)
	if failed {
		os.Exit(1)
	}
}

// report copies what go test without -v prints from the events on in to w, every line read to
// keep, and returns whether anything failed, the top-level tests' times and what failed.
func report(in io.Reader, w, keep io.Writer) (failed bool, slow []timing, fails []failure) {
	held := map[string][]string{} // output of running tests, by package and test
	var order []string            // held's keys as they came
	failedPkgs := map[string]bool{}
	pkgOutput := map[string][]string{}
	pkgWithFailedTest := map[string]bool{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		fmt.Fprintf(keep, "%s\n", line)
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line) // a build error and other text go test prints as is
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "build-fail":
			failed = true
			fails = append(fails, failure{e.ImportPath, []string{"the build failed (its errors are above)"}})
		case e.Test == "" && e.Action == "output":
			if e.Output != "PASS\n" { // go test without -v prints only the result line
				fmt.Fprint(w, e.Output) // the package's own lines: its result, a panic, a timeout
				pkgOutput[e.Package] = append(pkgOutput[e.Package], e.Output)
			}
		case e.Test == "" && e.Action == "fail":
			failed = true
			failedPkgs[e.Package] = true
			if !pkgWithFailedTest[e.Package] {
				fails = append(fails, failure{e.Package, reasons(pkgOutput[e.Package], isPackageReason)})
			}
		case e.Action == "output":
			if _, ok := held[key]; !ok {
				order = append(order, key)
			}
			held[key] = append(held[key], e.Output)
		case e.Action == "fail":
			failed = true
			fmt.Fprint(w, strings.Join(held[key], ""))
			pkgWithFailedTest[e.Package] = true
			fails = append(fails, failure{e.Package + "." + e.Test, reasons(held[key], isTestReason)})
			delete(held, key)
		case e.Action == "pass" || e.Action == "skip":
			delete(held, key)
		}
		if (e.Action == "pass" || e.Action == "fail") && e.Test != "" && !strings.Contains(e.Test, "/") {
			slow = append(slow, timing{e.Package + "." + e.Test, e.Elapsed})
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(w, "testreport: reading go test's output:", err)
		failed = true
	}
	// A test still running when its package failed (a timeout, a panic elsewhere) got no result
	// of its own: what it printed is shown with the package's failure.
	for _, key := range order {
		if lines, ok := held[key]; ok && failedPkgs[strings.Fields(key)[0]] {
			fmt.Fprint(w, strings.Join(lines, ""))
		}
	}
	return failed, slow, fails
}

// maxReasons bounds the lines printed for one failure: the first messages say why; the rest are
// in the output above.
const maxReasons = 4

// reasons picks the lines of out that say why a test or package failed, at most maxReasons of
// them, each cut to at most 300 bytes at a character's start (a message may quote a whole log).
func reasons(out []string, keep func(string) bool) []string {
	var r []string
	for _, l := range out {
		for _, one := range strings.Split(strings.TrimRight(l, "\n"), "\n") {
			if !keep(one) {
				continue
			}
			one = strings.TrimSpace(one)
			if len(one) > 300 {
				cut := 300
				for cut > 0 && !utf8.RuneStart(one[cut]) {
					cut-- // not inside a character: the report stays valid UTF-8
				}
				one = one[:cut] + " …"
			}
			if r = append(r, one); len(r) == maxReasons {
				return r
			}
		}
	}
	return r
}

// isTestReason: a message of t.Error, t.Fatal or t.Log ("    file_test.go:12: ..."), a panic.
func isTestReason(l string) bool {
	t := strings.TrimLeft(l, " \t")
	if strings.HasPrefix(t, "panic:") {
		return true
	}
	file, _, ok := strings.Cut(t, ": ")
	name, line, ok2 := strings.Cut(file, ".go:")
	return ok && ok2 && name != "" && !strings.ContainsAny(name, " \t") && line != "" && strings.Trim(line, "0123456789") == ""
}

// isPackageReason: a panic, a timeout, the tests that were running when it came.
func isPackageReason(l string) bool {
	return strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "running tests:") ||
		strings.HasPrefix(strings.TrimSpace(l), "Test") || strings.HasPrefix(l, "fatal error:")
}

// printFailures closes the report with what failed and why, so that it is in the last lines.
func printFailures(w io.Writer, fails []failure) {
	if len(fails) == 0 {
		return
	}
	fmt.Fprintf(w, "\nfailed (%d):\n", len(fails))
	for _, f := range fails {
		fmt.Fprintf(w, "  %s\n", strings.TrimPrefix(f.name, "github.com/git-xet-transfer/git-xet-transfer/"))
		for _, l := range f.lines {
			fmt.Fprintf(w, "      %s\n", l)
		}
	}
}

// printSlowest prints the n slowest of the tests and the share of the tests' time they took.
func printSlowest(w io.Writer, slow []timing, n int) {
	if n <= 0 || len(slow) == 0 {
		return
	}
	sort.SliceStable(slow, func(a, b int) bool { return slow[a].elapsed > slow[b].elapsed })
	var total, shown float64
	for _, t := range slow {
		total += t.elapsed
	}
	n = min(n, len(slow))
	fmt.Fprintf(w, "\nthe %d slowest tests:\n", n)
	for _, t := range slow[:n] {
		shown += t.elapsed
		fmt.Fprintf(w, "  %8.1f s  %s\n", t.elapsed, strings.TrimPrefix(t.name, "github.com/git-xet-transfer/git-xet-transfer/"))
	}
	fmt.Fprintf(w, "  %8.1f s  of %.1f s in %d tests (parallel tests overlap)\n", shown, total, len(slow))
}
