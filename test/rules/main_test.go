package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// violations is a small module with each kind of finding, marked "// want RULE" on its line, and
// the look-alikes the rules must let pass.
var violations = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.22\n",
	"protocol/protocol.go": `package protocol

type Request struct{}
`,
	"agent/loop.go": `package agent

import (
	"context"
	"os"

	"example.com/m/protocol"
)

type loop struct {
	ctx    context.Context // want ctxfield
	cancel context.CancelFunc
	req    protocol.Request
}

type wrapped struct {
	context.Context // want ctxfield
}

// A comment naming os.Getenv is no read.
func mode(ctx context.Context) string {
	var local context.Context = ctx
	_ = local
	_ = "os.Getenv"
	return os.Getenv("MODE") // want env
}
`,
	"agent/migrate/target.go": `package migrate

import (
	o "os"
	"syscall"

	"example.com/m/protocol" // want protocol
)

var _ protocol.Request

func token() string {
	v, _ := o.LookupEnv("TOKEN") // want env
	w, _ := syscall.Getenv("W")  // want env
	read := o.Environ            // want env
	_ = read
	return v + w
}
`,
	"agent/other.go": `//go:build !linux

package agent

import "os"

var home = os.ExpandEnv("$HOME") // want env
`,
	"agent/kill.go": `//go:build xetcrash && unix

package agent

import "os"

var crash = os.Getenv("CRASH")
`,
	"agent/loop_test.go": `package agent

import (
	"context"
	"os"

	"example.com/m/protocol"
)

type fake struct {
	ctx context.Context
	req protocol.Request
}

var _ = os.Getenv("X")
`,
	"cmd/tool/main.go": `package main

import (
	"context"
	"os"

	"example.com/m/protocol"
)

var opts = struct {
	inner struct {
		ctx *context.Context // want ctxfield
	}
}{}

var _ protocol.Request

func main() { _ = os.Getenv("HOME") }
`,
	"internal/testutil/env.go": `package testutil

import "os"

func Env() []string { return os.Environ() }
`,
	"testdata/ignored.go": `package ignored

import "os"

var _ = os.Getenv("X")
`,
}

// Every kind of finding is reported at its line, and nothing else: not the allowed packages, test
// files, test-only builds, comments, strings, locals or parameters.
func TestFindsEachViolation(t *testing.T) {
	root := writeTree(t, violations)
	got, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := wanted(violations); !reflect.DeepEqual(places(got), want) {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(places(got), "\n"), strings.Join(want, "\n"))
	}
}

// A tree that keeps the rules has no finding.
func TestCleanTree(t *testing.T) {
	clean := map[string]string{}
	for p, src := range violations {
		if !strings.Contains(src, "// want") {
			clean[p] = src
		}
	}
	root := writeTree(t, clean)
	got, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("findings in a clean tree:\n%s", strings.Join(places(got), "\n"))
	}
}

// A tree that does not parse is an error, not a pass.
func TestUnparsableTree(t *testing.T) {
	root := writeTree(t, map[string]string{"go.mod": "module example.com/m\n", "a/a.go": "package a\nfunc {"})
	if _, err := check(root); err == nil {
		t.Fatal("no error for a file that does not parse")
	}
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, src := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func places(found []finding) []string {
	var out []string
	for _, f := range found {
		out = append(out, fmt.Sprintf("%s:%d: %s", f.pos.Filename, f.pos.Line, f.rule))
	}
	sort.Strings(out)
	return out
}

var wantMark = regexp.MustCompile(`// want (\w+)`)

// wanted lists the lines marked "// want RULE" as path:line: rule.
func wanted(files map[string]string) []string {
	var out []string
	for p, src := range files {
		for i, line := range strings.Split(src, "\n") {
			if m := wantMark.FindStringSubmatch(line); m != nil {
				out = append(out, fmt.Sprintf("%s:%d: %s", p, i+1, m[1]))
			}
		}
	}
	sort.Strings(out)
	return out
}
