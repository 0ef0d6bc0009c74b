//go:build unix

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPollStdin: the agent reads a pipe (what git-lfs gives it) through the runtime's poller, which
// a read deadline proves (a blocking file refuses deadlines), and still reads what comes; a file or
// a reader that is not a file is read as it is.
func TestPollStdin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	got := pollStdin(r)
	p, ok := got.(*os.File)
	if !ok || p == r {
		t.Fatalf("a pipe is read through %T %p, not a new file", got, p)
	}
	defer p.Close()
	buf := make([]byte, 16)
	if err := p.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatalf("the pipe is not in the poller: %v", err)
	}
	if _, err := p.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read of an empty pipe with a deadline: %v, want the deadline", err)
	}
	p.SetReadDeadline(time.Time{})
	if _, err := w.Write([]byte("{\"event\":\"init\"}\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	read, err := io.ReadAll(p)
	if err != nil || string(read) != "{\"event\":\"init\"}\n" {
		t.Fatalf("read %q, %v", read, err)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "requests"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if same := pollStdin(f); same != io.Reader(f) {
		t.Fatal("a regular file was reopened")
	}
	for _, in := range []io.Reader{strings.NewReader("x"), &bytes.Buffer{}} {
		if same := pollStdin(in); same != in {
			t.Fatalf("%T was replaced", in)
		}
	}
}
