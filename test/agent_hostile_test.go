package test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Hostile input on the real agent's stdin, in a repository with an embedded remote: each sequence
// gets a clear error (a complete with an error for the object it names, or the process ending
// with a message on stderr), within seconds; never a panic, never a line on stdout that is not
// JSON, never a file written outside the repository.
func TestAgentHostileInput(t *testing.T) {
	e := newEnv(t)
	e.install()
	work, _ := e.localRepo(repoOpts{})
	good := filepath.Join(work, "a.bin")
	writeFile(t, good, []byte("hello"))
	oid := strings.Repeat("ab", 32)
	escape := filepath.Join(t.TempDir(), "escaped") // where a traversing oid would land
	initUp := `{"event":"init","operation":"upload","remote":"origin","concurrent":true,"concurrenttransfers":1}`
	for _, c := range []struct {
		name  string
		lines []string
		want  string // in a complete's error or on stderr
	}{
		{"malformed JSON", []string{initUp, `{"event":"upload",`}, "malformed"},
		{"a 10 MB line", []string{initUp, `{"event":"upload","path":"` + strings.Repeat("x", 10<<20) + `"}`}, "longer than"},
		{"unknown event", []string{initUp, `{"event":"explode"}`}, "unknown event"},
		{"oid not hex", []string{initUp, `{"event":"upload","oid":"` + strings.Repeat("zz", 32) + `","size":5,"path":"` + good + `"}`}, "64 lowercase hex"},
		{"oid with a path", []string{initUp, `{"event":"upload","oid":"../../../../../../../../..` + escape + `","size":5,"path":"` + good + `"}`}, "oid"},
		{"download oid with a path", []string{strings.Replace(initUp, "upload", "download", 1), `{"event":"download","oid":"../../../../../../../../..` + escape + `","size":5}`}, "oid"},
		{"missing file", []string{initUp, `{"event":"upload","oid":"` + oid + `","size":5,"path":"` + filepath.Join(work, "nope.bin") + `"}`}, "nope.bin"},
		{"size disagrees", []string{initUp, `{"event":"upload","oid":"` + oid + `","size":9,"path":"` + good + `"}`}, "git-lfs said 9"},
		{"upload before init", []string{`{"event":"upload","oid":"` + oid + `","size":5,"path":"` + good + `"}`}, "want init"},
		{"two inits", []string{initUp, initUp}, "second init"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr := runAgent(t, e, work, c.lines)
			for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
				if l != "" && !json.Valid([]byte(l)) {
					t.Errorf("stdout line is not JSON: %.200q", l)
				}
			}
			if !strings.Contains(stdout+stderr, c.want) {
				t.Errorf("want %q in the answer or on stderr\nstdout: %.500s\nstderr: %.500s", c.want, stdout, stderr)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Errorf("the agent panicked:\n%.2000s", stderr)
			}
		})
	}
	if _, err := os.Stat(escape); err == nil {
		t.Errorf("a traversing oid wrote %s", escape)
	}
}

// runAgent runs git-xet-transfer in dir with lines on its stdin (then terminate and end of input)
// and returns its stdout and stderr; it fails the test when the agent takes over 30 s.
func runAgent(t *testing.T, e *env, dir string, lines []string) (string, string) {
	t.Helper()
	cmd := e.cmd(dir, filepath.Join(binDir, "git-xet-transfer"))
	cmd.Stdin = strings.NewReader(strings.Join(append(lines, `{"event":"terminate"}`), "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the agent did not answer within 30 s\nstderr: %.500s", stderr.String())
	}
	return stdout.String(), stderr.String()
}
