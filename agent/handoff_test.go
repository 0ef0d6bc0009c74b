package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/protocol"
)

// fakeHandOff answers hand-offs from a script, recording the bytes each was given.
type fakeHandOff struct {
	outcomes []share.Outcome
	got      []string
	err      error
}

func (f *fakeHandOff) HandOff(ctx context.Context, p Pipes, buffered []byte) (share.Outcome, bool, error) {
	f.got = append(f.got, string(buffered))
	if len(f.outcomes) == 0 {
		return share.Outcome{}, false, nil
	}
	o := f.outcomes[0]
	f.outcomes = f.outcomes[1:]
	return o, true, f.err
}

const terminate = `{"event":"terminate"}` + "\n"

// A conversation given back is handed off again with the bytes that came back; once no leader
// takes it, the process goes on itself, reading those bytes before its stdin.
func TestHandOffLoopGoesOnWithWhatCameBack(t *testing.T) {
	f := &fakeHandOff{outcomes: []share.Outcome{{Resume: []byte("{\"event\":")}}}
	in := strings.NewReader(`"terminate"}` + "\n")
	dec, over, err := handOffLoop(context.Background(), f, Pipes{}, in, nil)
	if over || err != nil {
		t.Fatalf("over %v, %v", over, err)
	}
	if len(f.got) != 2 || f.got[0] != "" || f.got[1] != "{\"event\":" {
		t.Fatalf("handed off with %q", f.got)
	}
	if req, err := dec.Decode(); err != nil || req.Event != protocol.EventTerminate {
		t.Fatalf("went on with %+v, %v", req, err)
	}
}

// Exit ends the process (with the leader's error, when it sent one); a leader gone without a word
// is an error.
func TestHandOffLoopOutcomes(t *testing.T) {
	for _, c := range []struct {
		o    share.Outcome
		err  error
		want string
	}{
		{share.Outcome{Exit: true}, nil, ""},
		{share.Outcome{Exit: true, Err: "writing to git-lfs (stdout): broken pipe"}, nil, "broken pipe"},
		{share.Outcome{}, errors.New("the leader ended; run the push again"), "run the push again"},
	} {
		f := &fakeHandOff{outcomes: []share.Outcome{c.o}, err: c.err}
		_, over, err := handOffLoop(context.Background(), f, Pipes{}, strings.NewReader(""), nil)
		if !over || (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: over %v, error %v; want %q", c.o, over, err, c.want)
		}
	}
}

// The leader serves a handed conversation through its own Transferer: the follower's read-ahead
// bytes first, a relative path taken from the follower's directory, each answer on the follower's
// stdout, and terminate ends it.
func TestServePipe(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		paths = append(paths, obj.Path)
		return Result{Mode: ModeEmbedded}, nil
	}}
	oid := oidN(7)
	up := fmt.Sprintf(`{"event":"upload","oid":%q,"size":5000,"path":"obj"}`+"\n", oid)
	var out bytes.Buffer
	o := ServePipe(context.Background(), f, Init{Operation: "upload", Remote: "origin"}, zerolog.Nop(), &share.Pipe{Buffered: []byte(up), In: strings.NewReader(terminate), Out: &out, Dir: dir, Pid: 42})
	if !o.Exit || o.Err != "" {
		t.Fatalf("outcome %+v, want a clean exit on terminate", o)
	}
	if !strings.Contains(out.String(), `"event":"complete","oid":"`+oid+`"`) || strings.Contains(out.String(), "error") {
		t.Fatalf("answers: %s", out.String())
	}
	if len(paths) != 1 || paths[0] != filepath.Join(dir, "obj") {
		t.Fatalf("uploaded paths %q, want the follower's %s", paths, filepath.Join(dir, "obj"))
	}
}

// handingOffFake is a Transferer that can hand off, recording its hand-offs.
type handingOffFake struct {
	fake
	fakeHandOff
}

// A process git-lfs sends no request (init, then terminate or the end of its input) neither hands
// its conversation off nor asks for its settings (FirstRequest): both need git, and most of the
// processes git-lfs starts for a command get no request. The first request does both, once, and
// the leader is given that request first.
func TestNoHandOffBeforeFirstRequest(t *testing.T) {
	up := uploadLine(oidN(1), 5) + "\n"
	for _, c := range []struct {
		name, in string
		handOffs []string
		firsts   int
	}{
		{"terminate", initUpload + "\n" + terminate, nil, 0},
		{"end of input", initUpload + "\n", nil, 0},
		{"a request", initUpload + "\n" + up + terminate, []string{up + terminate}, 1},
		// One it cannot read is answered here (its line is gone: there is nothing to hand over).
		{"a malformed request", initUpload + "\n" + `{"event":"upload","oid":"` + oidN(1) + `","size":-1}` + "\n" + terminate, nil, 1},
	} {
		h := &handingOffFake{fakeHandOff: fakeHandOff{outcomes: []share.Outcome{{Exit: true}}}}
		open := func(ctx context.Context, init Init) (Transferer, error) { return h, nil }
		firsts := 0
		var out bytes.Buffer
		err := Run(context.Background(), strings.NewReader(c.in), &out, Options{Open: open, Log: zerolog.Nop(),
			Pipes: &Pipes{}, FirstRequest: func() { firsts++ }})
		if want := "{}\n"; c.name == "a malformed request" {
			if err != nil || !strings.Contains(out.String(), `"error"`) {
				t.Errorf("%s: wrote %q, want a complete with an error (%v)", c.name, out.String(), err)
			}
		} else if err != nil || out.String() != want {
			t.Errorf("%s: %v, wrote %q; want the init reply only", c.name, err, out.String())
		}
		if fmt.Sprint(h.got) != fmt.Sprint(c.handOffs) || firsts != c.firsts {
			t.Errorf("%s: handed off with %q, FirstRequest called %d times; want %q, %d", c.name, h.got, firsts, c.handOffs, c.firsts)
		}
	}
}

// pipeConv is a served conversation on real pipes: git-lfs writes requests to req and reads the
// answers from resp; the follower's stdin and stdout (what the leader serves) are in and out.
type pipeConv struct {
	in, out   *os.File
	req, resp *os.File
}

func newPipeConv(t *testing.T) *pipeConv {
	t.Helper()
	inR, inW := testutil.Pipe(t)
	outR, outW := testutil.Pipe(t)
	return &pipeConv{in: inR, out: outW, req: inW, resp: outR}
}

// A follower's git-lfs that goes away mid-transfer (its end of the follower's stdin closes) stops
// that follower's transfer in the leader within a second, and the conversation ends; another
// conversation the leader serves meanwhile goes on and completes.
func TestServePipeStopsWhenGitLFSGoes(t *testing.T) {
	stopped := make(chan time.Time, 1)
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		if obj.Oid == oidN(1) { // the doomed follower's: runs until stopped
			progress(1)
			<-ctx.Done()
			stopped <- time.Now()
			return Result{}, ctx.Err()
		}
		return Result{Mode: ModeEmbedded}, nil
	}}
	init := Init{Operation: "upload", Remote: "origin"}
	doomed, other := newPipeConv(t), newPipeConv(t)
	outcomes := make(chan share.Outcome, 1)
	go func() {
		outcomes <- ServePipe(context.Background(), f, init, zerolog.Nop(), &share.Pipe{In: doomed.in, Out: doomed.out, Pid: 1})
	}()
	if _, err := io.WriteString(doomed.req, uploadLine(oidN(1), 1<<20)+"\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(doomed.resp).ReadString('\n'); err != nil || !strings.Contains(line, `"progress"`) {
		t.Fatalf("no progress from the transfer: %q, %v", line, err)
	}
	others := make(chan share.Outcome, 1)
	go func() {
		others <- ServePipe(context.Background(), f, init, zerolog.Nop(), &share.Pipe{In: other.in, Out: other.out, Pid: 2})
	}()
	gone := time.Now()
	doomed.req.Close() // git-lfs killed
	select {
	case at := <-stopped:
		if d := at.Sub(gone); d > time.Second {
			t.Errorf("the transfer stopped %v after git-lfs went away, want within 1 s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the transfer went on 10 s after its git-lfs went away")
	}
	if o := <-outcomes; !o.Exit {
		t.Errorf("outcome %+v, want the conversation over", o)
	}
	fmt.Fprintf(other.req, "%s\n%s", uploadLine(oidN(2), 5), terminate)
	if o := <-others; !o.Exit || o.Err != "" {
		t.Fatalf("the other conversation: outcome %+v", o)
	}
	other.out.Close()
	answers, _ := io.ReadAll(other.resp)
	if !strings.Contains(string(answers), `"complete","oid":"`+oidN(2)) || strings.Contains(string(answers), "error") {
		t.Fatalf("the other conversation's answers %s", answers)
	}
}
