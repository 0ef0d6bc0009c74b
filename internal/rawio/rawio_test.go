//go:build unix

package rawio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// nonBlockingPipe returns a pipe whose ends are non-blocking and in the poller.
func nonBlockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if err := syscall.SetNonblock(fd, true); err != nil {
			t.Fatal(err)
		}
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// What is written comes out whole and in order, also when it is more than the pipe holds (the
// writer waits in the poller for the reader), and the end of the stream is io.EOF.
func TestRoundTrip(t *testing.T) {
	r, w := nonBlockingPipe(t)
	rf, err := New(r)
	if err != nil {
		t.Fatal(err)
	}
	wf, err := New(w)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: more than a pipe's 64 KiB
	done := make(chan error, 1)
	go func() {
		n, err := wf.Write(want)
		if err == nil && n != len(want) {
			err = errors.New("short write")
		}
		w.Close()
		done <- err
	}()
	got, err := io.ReadAll(rf)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
	if n, err := rf.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("after the end: %d, %v; want io.EOF", n, err)
	}
}

// A read waits in the poller, so the descriptor's deadline ends it; a write to a closed pipe is an
// error, not a hang.
func TestDeadlineAndErrors(t *testing.T) {
	r, w := nonBlockingPipe(t)
	rf, _ := New(r)
	if err := r.SetReadDeadline(time.Now().Add(30 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := rf.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of an empty pipe past its deadline: %v", err)
	}
	// The FD's own SetReadDeadline is the file's: a read waiting for data stops at it.
	if err := rf.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { _, err := rf.Read(make([]byte, 8)); stopped <- err }()
	if err := rf.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a waiting read after SetReadDeadline: %v", err)
	}
	wf, _ := New(w)
	r.Close()
	if _, err := wf.Write([]byte("x")); err == nil {
		t.Fatal("a write to a pipe without a reader succeeded")
	}
}
