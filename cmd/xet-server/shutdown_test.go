package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// SIGTERM ends the server within 2 s while a client is halfway through an upload (a slow link, a
// client that stalled): the upload is cut (its client retries it, against this process's successor
// or another instance), what was complete is kept, and the store is closed cleanly (exit 0). Before,
// Shutdown waited up to --shutdown-timeout's 30 s for the body and then left the store unclosed.
func TestSIGTERMWithAnUploadInFlight(t *testing.T) {
	data := t.TempDir()
	addr, logs, stop := startServer(t, "--data", data)
	done := testutil.NewOneXorbFile([][]byte{testutil.RandomBytes(3000, 1), testutil.RandomBytes(2000, 2)})
	putFile(t, addr, logs, done)

	// The upload in flight: its handler reads the body (the 100 Continue says so), which stops
	// halfway.
	slow := testutil.NewOneXorbFile([][]byte{testutil.RandomBytes(60000, 3), testutil.RandomBytes(60000, 4)})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/xorbs/default/%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/octet-stream\r\n"+
		"Content-Length: %d\r\nExpect: 100-continue\r\n\r\n", slow.Xorb, addr, len(slow.Body))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, " 100 ") {
		t.Fatalf("the server did not start reading the upload: %q %v\n%s", line, err, logs.String())
	}
	br.ReadString('\n') // the blank line that ends the interim answer
	if _, err := conn.Write(slow.Body[:len(slow.Body)/2]); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	code := stop()
	took := time.Since(began)
	if took > 2*time.Second {
		t.Errorf("the server took %v to stop with an upload in flight", took)
	}
	if code != 0 {
		t.Errorf("exit %d after SIGTERM with an upload in flight (the store must be closed cleanly):\n%s", code, logs.String())
	}
	if !strings.Contains(logs.String(), "cut the requests still in flight") {
		t.Errorf("the log does not say a request was cut:\n%s", logs.String())
	}
	// The client learns its upload was cut: the connection ends without a 200.
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if rest, _ := io.ReadAll(br); bytes.Contains(rest, []byte(" 200 ")) {
		t.Errorf("the cut upload was answered 200: %q", rest)
	}

	// What was complete is kept; the cut upload left nothing behind.
	addr, logs, stop = startServer(t, "--data", data)
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("exit %d: %s", code, logs.String())
		}
	}()
	for path, want := range map[string]int{
		"/v1/xorbs/default/" + done.Xorb.String(): http.StatusOK,
		"/v1/files/" + done.File.String():         http.StatusOK,
		"/v1/xorbs/default/" + slow.Xorb.String(): http.StatusNotFound,
	} {
		res, err := http.Head("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("HEAD %s after the restart: %d, want %d", path, res.StatusCode, want)
		}
	}
}
