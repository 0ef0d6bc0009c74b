package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/protocol"
)

// fake is a Transferer whose behaviour each test sets.
type fake struct {
	mu       sync.Mutex
	init     Init
	objects  []Object
	upload   func(ctx context.Context, obj Object, progress func(int64)) (Result, error)
	download func(ctx context.Context, obj Object, progress func(int64)) (Result, error)
	closed   bool
}

func (f *fake) Upload(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
	f.mu.Lock()
	f.objects = append(f.objects, obj)
	f.mu.Unlock()
	return f.upload(ctx, obj, progress)
}

func (f *fake) Download(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
	f.mu.Lock()
	f.objects = append(f.objects, obj)
	f.mu.Unlock()
	return f.download(ctx, obj, progress)
}

func (f *fake) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

// session drives Run like git-lfs does: it writes request lines and reads response lines.
type session struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func start(t *testing.T, f *fake, openErr error) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	open := func(ctx context.Context, init Init) (Transferer, error) {
		if openErr != nil {
			return nil, openErr
		}
		f.init = init
		return f, nil
	}
	go func() {
		err := Run(context.Background(), inR, outW, Options{Open: open, Log: zerolog.Nop(), ProgressInterval: 50 * time.Millisecond})
		outW.Close()
		s.done <- err
	}()
	t.Cleanup(func() { inW.Close() })
	return s
}

func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("writing request: %v", err)
	}
}

type response struct {
	Event          string          `json:"event"`
	Oid            string          `json:"oid"`
	Path           string          `json:"path"`
	BytesSoFar     int64           `json:"bytesSoFar"`
	BytesSinceLast int64           `json:"bytesSinceLast"`
	Error          *protocol.Error `json:"error"`
}

func (s *session) recv() response {
	s.t.Helper()
	type lineErr struct {
		line string
		err  error
	}
	ch := make(chan lineErr, 1)
	go func() {
		l, err := s.out.ReadString('\n')
		ch <- lineErr{l, err}
	}()
	select {
	case le := <-ch:
		if le.err != nil {
			s.t.Fatalf("reading response: %v", le.err)
		}
		var r response
		if err := json.Unmarshal([]byte(le.line), &r); err != nil {
			s.t.Fatalf("response %q is not JSON: %v", le.line, err)
		}
		return r
	case <-time.After(10 * time.Second):
		s.t.Fatal("no response within 10s")
	}
	return response{}
}

// untilComplete reads progress messages up to the complete message of oid.
func (s *session) untilComplete(oid string) (progress []response, complete response) {
	s.t.Helper()
	for {
		r := s.recv()
		if r.Oid != oid {
			s.t.Fatalf("response for oid %q, want %q", r.Oid, oid)
		}
		switch r.Event {
		case "progress":
			progress = append(progress, r)
		case "complete":
			return progress, r
		default:
			s.t.Fatalf("unexpected event %q", r.Event)
		}
	}
}

func (s *session) wait() error {
	s.t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(10 * time.Second):
		s.t.Fatal("agent did not exit within 10s")
	}
	return nil
}

func oidN(n int) string { return fmt.Sprintf("%064x", n) }

const initUpload = `{"event":"init","operation":"upload","remote":"origin","concurrent":true,"concurrenttransfers":8}`
const initDownload = `{"event":"init","operation":"download","remote":"origin","concurrent":true,"concurrenttransfers":3}`

func uploadLine(oid string, size int64) string {
	return fmt.Sprintf(`{"event":"upload","oid":"%s","size":%d,"path":"/tmp/%s","action":null}`, oid, size, oid)
}

// checkProgress asserts what git-lfs relies on: the first message says bytesSoFar > 0 (it frees the
// other workers), bytesSoFar increases, bytesSinceLast adds up, and the last one is the full size.
func checkProgress(t *testing.T, ps []response, size int64) {
	t.Helper()
	if len(ps) == 0 {
		t.Fatal("no progress messages")
	}
	if ps[0].BytesSoFar <= 0 {
		t.Errorf("first progress has bytesSoFar %d, want > 0", ps[0].BytesSoFar)
	}
	var sum, prev int64
	for _, p := range ps {
		if p.BytesSoFar <= prev {
			t.Errorf("bytesSoFar went from %d to %d", prev, p.BytesSoFar)
		}
		sum += p.BytesSinceLast
		if sum != p.BytesSoFar {
			t.Errorf("bytesSinceLast adds up to %d, bytesSoFar is %d", sum, p.BytesSoFar)
		}
		prev = p.BytesSoFar
	}
	if prev != size {
		t.Errorf("last bytesSoFar %d, want size %d", prev, size)
	}
}

func TestUploadFlow(t *testing.T) {
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		for done := int64(0); done <= obj.Size; done += obj.Size / 10 {
			progress(done)
		}
		return Result{Mode: "fake", NewBytes: obj.Size}, nil
	}}
	s := start(t, f, nil)
	s.send(initUpload)
	if r := s.recv(); r.Event != "" || r.Error != nil {
		t.Fatalf("init reply = %+v, want {}", r)
	}
	for i := 1; i <= 3; i++ {
		s.send(uploadLine(oidN(i), 1000*int64(i)))
		ps, c := s.untilComplete(oidN(i))
		if c.Error != nil || c.Path != "" {
			t.Fatalf("complete = %+v", c)
		}
		checkProgress(t, ps, 1000*int64(i))
	}
	s.send(`{"event":"terminate"}`)
	if err := s.wait(); err != nil {
		t.Fatalf("Run = %v after terminate", err)
	}
	if f.init.Operation != "upload" || f.init.Remote != "origin" || f.init.ConcurrentTransfers != 8 || !f.init.Concurrent {
		t.Errorf("init = %+v", f.init)
	}
	if len(f.objects) != 3 || f.objects[1].Path != "/tmp/"+oidN(2) || f.objects[1].Action != nil || !f.closed {
		t.Errorf("objects = %+v closed=%v", f.objects, f.closed)
	}
}

func TestFailedObjectDoesNotEndProcess(t *testing.T) {
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		if obj.Oid == oidN(1) {
			return Result{}, errors.New("xorb upload refused: 403 Forbidden")
		}
		return Result{}, nil
	}}
	s := start(t, f, nil)
	s.send(initUpload)
	s.recv()
	s.send(uploadLine(oidN(1), 10))
	_, c := s.untilComplete(oidN(1))
	if c.Error == nil || c.Error.Code != protocol.CodeTransfer || !strings.Contains(c.Error.Message, "403 Forbidden") {
		t.Fatalf("complete = %+v, want error with the cause", c)
	}
	s.send(uploadLine(oidN(2), 10))
	ps, c := s.untilComplete(oidN(2))
	if c.Error != nil {
		t.Fatalf("second object failed: %+v", c.Error)
	}
	checkProgress(t, ps, 10)
	s.send(`{"event":"terminate"}`)
	if err := s.wait(); err != nil {
		t.Fatal(err)
	}
}

func TestDownloadReturnsPath(t *testing.T) {
	f := &fake{download: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		if obj.Action == nil || obj.Action.Header["X-Xet-Hash"] != "h" {
			return Result{}, fmt.Errorf("action not passed: %+v", obj.Action)
		}
		progress(obj.Size)
		return Result{Path: "/tmp/dl-" + obj.Oid}, nil
	}}
	s := start(t, f, nil)
	s.send(initDownload)
	s.recv()
	s.send(`{"event":"download","oid":"` + oidN(7) + `","size":5,"action":{"href":"http://127.0.0.1/x","header":{"X-Xet-Hash":"h"},"expires_at":"0001-01-01T00:00:00Z"}}`)
	ps, c := s.untilComplete(oidN(7))
	if c.Error != nil || c.Path != "/tmp/dl-"+oidN(7) {
		t.Fatalf("complete = %+v", c)
	}
	checkProgress(t, ps, 5)
	s.in.Close() // git-lfs closing stdin between requests is a clean end
	if err := s.wait(); err != nil {
		t.Fatal(err)
	}
}

func TestInitErrorIsReported(t *testing.T) {
	s := start(t, &fake{}, errors.New("remote origin is https://example.test: no Xet store"))
	s.send(initUpload)
	r := s.recv()
	if r.Error == nil || r.Error.Code != protocol.CodeInit || !strings.Contains(r.Error.Message, "no Xet store") {
		t.Fatalf("init reply = %+v", r)
	}
	if err := s.wait(); err == nil {
		t.Fatal("Run returned nil after a failed init")
	}
}

func TestFirstRequestMustBeInit(t *testing.T) {
	s := start(t, &fake{}, nil)
	s.send(uploadLine(oidN(1), 1))
	r := s.recv()
	if r.Error == nil || !strings.Contains(r.Error.Message, "want init") {
		t.Fatalf("reply = %+v", r)
	}
	if err := s.wait(); err == nil || !strings.Contains(err.Error(), "want init") {
		t.Fatalf("Run = %v", err)
	}
}

func TestMalformedRequests(t *testing.T) {
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) { return Result{}, nil }}
	s := start(t, f, nil)
	s.send(initUpload)
	s.recv()
	// Attributable to an object: that object fails, the process goes on.
	s.send(`{"event":"upload","oid":"` + oidN(3) + `","size":4}`)
	_, c := s.untilComplete(oidN(3))
	if c.Error == nil || !strings.Contains(c.Error.Message, "no path") {
		t.Fatalf("complete = %+v", c)
	}
	// Operation mismatch: the object fails.
	s.send(`{"event":"download","oid":"` + oidN(4) + `","size":4}`)
	_, c = s.untilComplete(oidN(4))
	if c.Error == nil || !strings.Contains(c.Error.Message, "started for upload") {
		t.Fatalf("complete = %+v", c)
	}
	// Not attributable: the conversation is broken, Run says why.
	s.send(`this is not json`)
	err := s.wait()
	if err == nil || !strings.Contains(err.Error(), "malformed custom-transfer request") || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("Run = %v", err)
	}
	if len(f.objects) != 0 {
		t.Errorf("malformed requests reached the transferer: %+v", f.objects)
	}
}

// When git-lfs goes away during a transfer, the transfer's context is cancelled and Run returns.
func TestInputClosedCancelsTransfer(t *testing.T) {
	started := make(chan struct{})
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		close(started)
		<-ctx.Done()
		return Result{}, ctx.Err()
	}}
	s := start(t, f, nil)
	s.send(initUpload)
	s.recv()
	s.send(uploadLine(oidN(1), 100))
	go io.Copy(io.Discard, s.out) // progress, and a complete that git-lfs would no longer read
	<-started
	s.in.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestProgressIsThrottled(t *testing.T) {
	const size = 1 << 20
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		for done := int64(1); done <= size; done += 1024 {
			progress(done)
		}
		return Result{}, nil
	}}
	s := start(t, f, nil)
	s.send(initUpload)
	s.recv()
	s.send(uploadLine(oidN(1), size))
	ps, c := s.untilComplete(oidN(1))
	if c.Error != nil {
		t.Fatal(c.Error)
	}
	checkProgress(t, ps, size)
	// 1024 updates in far less than a second at a 50 ms interval: a handful of messages.
	if len(ps) > 30 {
		t.Errorf("%d progress messages for 1024 updates, want throttling", len(ps))
	}
}

func TestProgressNeverPastSize(t *testing.T) {
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		progress(obj.Size * 3)
		progress(1)
		return Result{}, nil
	}}
	s := start(t, f, nil)
	s.send(initUpload)
	s.recv()
	s.send(uploadLine(oidN(2), 50))
	ps, _ := s.untilComplete(oidN(2))
	checkProgress(t, ps, 50)
}

// A small object after the process's first gets no message before its transfer is done: its one
// progress message (the full size) comes with its complete. The first object's early message
// (bytesSoFar 1) is what frees git-lfs's other workers; a big object's keeps the meter moving.
func TestSmallObjectsProgressWithComplete(t *testing.T) {
	release := make(chan struct{})
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		<-release
		return Result{Mode: "fake"}, nil
	}}
	s := start(t, f, nil)
	s.send(initUpload)
	s.recv()
	for i, size := range []int64{100, 200, 2 << 20} {
		s.send(uploadLine(oidN(i), size))
		early := i != 1 // the first object, and the big one
		if early {
			if r := s.recv(); r.Event != "progress" || r.BytesSoFar != 1 {
				t.Fatalf("object %d: first message %+v, want progress 1 before the transfer ends", i, r)
			}
		}
		release <- struct{}{}
		ps, c := s.untilComplete(oidN(i))
		if c.Error != nil || len(ps) != 1 || ps[0].BytesSoFar != size {
			t.Fatalf("object %d: %+v then %+v, want one progress at %d then complete", i, ps, c, size)
		}
	}
}

// A conversation handed over after its init was answered (Options.Ahead, InitAnswered): the init
// is opened from the bytes ahead without a second answer, and a request cut between the bytes
// ahead and stdin is read whole.
func TestRunGoesOnFromAnsweredInit(t *testing.T) {
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		return Result{Mode: "fake", NewBytes: obj.Size}, nil
	}}
	req := uploadLine(oidN(7), 700) + "\n"
	ahead := initUpload + "\n" + req[:20]
	in := strings.NewReader(req[20:] + `{"event":"terminate"}` + "\n")
	var out bytes.Buffer
	err := Run(context.Background(), in, &out, Options{
		Open:  func(ctx context.Context, init Init) (Transferer, error) { f.init = init; return f, nil },
		Log:   zerolog.Nop(),
		Ahead: []byte(ahead), InitAnswered: true,
	})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if f.init.Operation != "upload" || len(f.objects) != 1 || f.objects[0].Oid != oidN(7) {
		t.Fatalf("init %+v, objects %+v", f.init, f.objects)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if strings.TrimSpace(first) == "{}" {
		t.Fatalf("init answered again: %q", out.String())
	}
	if !strings.Contains(out.String(), `"event":"complete"`) {
		t.Fatalf("no complete in %q", out.String())
	}
}

// An agent that answered init and waits for its first request (most of the processes git-lfs
// starts get none) ends when its process is told to stop: before, it read on until a second
// signal killed it. Its stdin is a pipe with read deadlines, as the agent's is.
func TestRunStopsWhileAwaitingTheFirstRequest(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	outR, outW := io.Pipe()
	defer outR.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	open := func(context.Context, Init) (Transferer, error) { return &fake{}, nil }
	go func() {
		done <- Run(ctx, inR, outW, Options{Open: open, Log: zerolog.Nop()})
		outW.Close()
	}()
	if _, err := io.WriteString(inW, initUpload+"\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(outR).ReadString('\n'); err != nil { // init answered
		t.Fatal(err)
	}
	go io.Copy(io.Discard, outR)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want the end of its context", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run still waited for a first request 5 s after its context ended")
	}
}
