// Command testreport reads `go test -json` on stdin and prints what `go test` without -v would: the
// output of the packages and of the tests that failed, and each package's result line. At the end
// it prints the slowest tests, so that a CI run shows where its time went (the end-to-end package
// takes most of it, and a test that grows slower is seen before the package's -timeout is hit).
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
)

// event is a test2json event (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
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
	failed, slow := report(os.Stdin, os.Stdout, keep)
	printSlowest(os.Stdout, slow, *top)
	if failed {
		os.Exit(1)
	}
}

// report copies what go test without -v prints from the events on in to w, every line read to
// keep, and returns whether anything failed and the top-level tests' times.
func report(in io.Reader, w, keep io.Writer) (failed bool, slow []timing) {
	held := map[string][]string{} // output of running tests, by package and test
	var order []string            // held's keys as they came
	failedPkgs := map[string]bool{}
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
		case e.Test == "" && e.Action == "output":
			if e.Output != "PASS\n" { // go test without -v prints only the result line
				fmt.Fprint(w, e.Output) // the package's own lines: its result, a panic, a timeout
			}
		case e.Test == "" && e.Action == "fail":
			failed = true
			failedPkgs[e.Package] = true
		case e.Action == "output":
			if _, ok := held[key]; !ok {
				order = append(order, key)
			}
			held[key] = append(held[key], e.Output)
		case e.Action == "fail":
			failed = true
			fmt.Fprint(w, strings.Join(held[key], ""))
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
	return failed, slow
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
