package main

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/handover"
)

const (
	initUpload = `{"event":"init","operation":"upload","remote":"origin","concurrent":true,"concurrenttransfers":8}` + "\n"
	terminate  = `{"event":"terminate"}` + "\n"
	upload     = `{"event":"upload","oid":"` + "0000000000000000000000000000000000000000000000000000000000000007" + `","size":7,"path":"/tmp/x"}` + "\n"
)

// handed records what run handed to the full agent.
type handed struct {
	calls int
	h     handover.Handover
	rest  []byte // what stdin still held
}

func (r *handed) starter(locateErr, contErr error) starter {
	return starter{
		locate: func() (string, error) { return "/opt/git-xet-transfer", locateErr },
		cont: func(path string, h handover.Handover, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
			r.calls++
			if contErr != nil {
				return 1, contErr
			}
			r.h = h
			r.rest, _ = io.ReadAll(stdin)
			return 3, nil
		},
	}
}

// The processes git-lfs starts and sends no request: init is answered here, and the full agent is
// never started.
func TestIdleConversationStaysHere(t *testing.T) {
	for _, in := range []string{initUpload + terminate, initUpload, initUpload + "\n" + terminate} {
		var r handed
		var out, errOut bytes.Buffer
		if code := run(strings.NewReader(in), &out, &errOut, r.starter(nil, nil)); code != 0 || r.calls != 0 {
			t.Fatalf("%q: exit %d, full agent started %d times; stderr %q", in, code, r.calls, errOut.String())
		}
		if out.String() != "{}\n" || errOut.Len() != 0 {
			t.Fatalf("%q: stdout %q stderr %q, want the init reply only", in, out.String(), errOut.String())
		}
	}
}

// A request: the full agent gets the conversation from its first byte (the init marked answered)
// and reads on from stdin; its exit code is this process's.
func TestRequestIsHandedOver(t *testing.T) {
	var r handed
	var out bytes.Buffer
	in := initUpload + upload + terminate
	code := run(strings.NewReader(in), &out, io.Discard, r.starter(nil, nil))
	if code != 3 || r.calls != 1 || !r.h.InitAnswered || out.String() != "{}\n" {
		t.Fatalf("exit %d, %d hand-overs, answered %v, stdout %q", code, r.calls, r.h.InitAnswered, out.String())
	}
	if got := string(r.h.Ahead) + string(r.rest); got != in {
		t.Fatalf("the full agent sees %q, want %q", got, in)
	}
}

// Anything but a clean init is the full agent's to answer (its errors are the documented ones):
// nothing is answered here.
func TestUnexpectedStartIsHandedOverUnanswered(t *testing.T) {
	for _, in := range []string{"", upload, "{not json\n", `{"event":"init","operation":"upload"`} {
		var r handed
		var out bytes.Buffer
		if code := run(strings.NewReader(in), &out, io.Discard, r.starter(nil, nil)); code != 3 || r.calls != 1 || r.h.InitAnswered || out.Len() != 0 {
			t.Fatalf("%q: exit %d, %d hand-overs, answered %v, stdout %q", in, code, r.calls, r.h.InitAnswered, out.String())
		}
		if got := string(r.h.Ahead) + string(r.rest); got != in {
			t.Fatalf("%q: the full agent sees %q", in, got)
		}
	}
}

// A debug run (GIT_XET_LOG_LEVEL=debug) hands every process over before reading: each logs its
// start-up.
func TestDebugHandsOverAtOnce(t *testing.T) {
	var r handed
	s := r.starter(nil, nil)
	s.handAtOnce = debugging("DEBUG")
	var out bytes.Buffer
	if code := run(strings.NewReader(initUpload+terminate), &out, io.Discard, s); code != 3 || r.calls != 1 || len(r.h.Ahead) != 0 || out.Len() != 0 {
		t.Fatalf("exit %d, %d hand-overs, ahead %q, stdout %q", code, r.calls, r.h.Ahead, out.String())
	}
	if debugging("info") || debugging("") {
		t.Fatal("info or no level is not a debug run")
	}
}

// When the full agent cannot be started, git-lfs hears why for every object (and on stderr), and
// the process ends at terminate.
func TestMissingFullAgentFailsEachRequest(t *testing.T) {
	for _, c := range []struct {
		locate, cont error
	}{{errors.New("git-xet-transfer is not beside git-xet-transfer-agent (/opt/git-xet-transfer)"), nil}, {nil, errors.New("running /opt/git-xet-transfer: permission denied")}} {
		var r handed
		var out, errOut bytes.Buffer
		in := initUpload + upload + upload + terminate
		code := run(strings.NewReader(in), &out, &errOut, r.starter(c.locate, c.cont))
		want := c.locate
		if want == nil {
			want = c.cont
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if code != 1 || len(lines) != 3 || lines[0] != "{}" {
			t.Fatalf("exit %d, stdout %q", code, out.String())
		}
		for _, l := range lines[1:] {
			if !strings.Contains(l, `"event":"complete"`) || !strings.Contains(l, want.Error()) {
				t.Fatalf("answer %q does not name %q", l, want)
			}
		}
		if !strings.Contains(errOut.String(), want.Error()) {
			t.Fatalf("stderr %q", errOut.String())
		}
	}
	// Before init was answered, the init itself fails.
	var r handed
	var out bytes.Buffer
	s := r.starter(errors.New("not beside"), nil)
	s.handAtOnce = true
	if code := run(strings.NewReader(initUpload+terminate), &out, io.Discard, s); code != 1 || !strings.Contains(out.String(), "not beside") || !strings.Contains(out.String(), `"error"`) {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
}

// A request line of 100 MB before the first transfer (git-lfs sends lines under
// protocol.MaxLineLength) is not kept for the hand-over: before, every byte read was kept, 1.1 GB
// of memory for a 300 MB line and no bound for a line that never ends. The conversation, which
// cannot be handed over whole, is refused: each later object fails with why.
func TestLongLineIsNotKept(t *testing.T) {
	long := io.MultiReader(strings.NewReader(initUpload+`{"event":"upload","path":"`),
		io.LimitReader(zeros{}, 100<<20), strings.NewReader("\"}\n"+upload+terminate))
	var r handed
	var out, errOut bytes.Buffer
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code := run(long, &out, &errOut, r.starter(nil, nil))
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("reading a 100 MB line allocated %d MB", grew>>20)
	}
	if code == 0 || r.calls != 0 || !strings.Contains(errOut.String(), "longer than") {
		t.Fatalf("exit %d, %d hand-overs, stderr %q: want the conversation refused, saying why", code, r.calls, errOut.String())
	}
	if !strings.Contains(out.String(), `"oid":"0000000000000000000000000000000000000000000000000000000000000007"`) || !strings.Contains(out.String(), "longer than") {
		t.Fatalf("stdout %q: want the later upload failed with why", out.String())
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}
