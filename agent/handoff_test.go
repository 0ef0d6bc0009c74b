package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
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

// Stay keeps the conversation here without another hand-off; Exit ends the process (with the
// leader's error, when it sent one); a leader gone without a word is an error.
func TestHandOffLoopOutcomes(t *testing.T) {
	f := &fakeHandOff{outcomes: []share.Outcome{{Resume: []byte(terminate), Stay: true}, {}}}
	dec, over, err := handOffLoop(context.Background(), f, Pipes{}, strings.NewReader(""), nil)
	if over || err != nil || len(f.got) != 1 {
		t.Fatalf("stay: over %v, %v, %d hand-offs", over, err, len(f.got))
	}
	if req, err := dec.Decode(); err != nil || req.Event != protocol.EventTerminate {
		t.Fatalf("stay: went on with %+v, %v", req, err)
	}
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
// stdout, and terminate ends it. A request the leader does not serve for others is put back and the
// conversation returned for the follower to keep.
func TestServePipe(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		paths = append(paths, obj.Path)
		return Result{Mode: ModeEmbedded}, nil
	}}
	serves := func(ctx context.Context, obj Object) bool { return obj.Action == nil }
	oid := oidN(7)
	up := fmt.Sprintf(`{"event":"upload","oid":%q,"size":5000,"path":"obj"}`+"\n", oid)
	var out bytes.Buffer
	o := ServePipe(context.Background(), f, serves, Init{Operation: "upload", Remote: "origin"}, zerolog.Nop(), &share.Pipe{Buffered: []byte(up), In: strings.NewReader(terminate), Out: &out, Dir: dir, Pid: 42})
	if !o.Exit || o.Err != "" {
		t.Fatalf("outcome %+v, want a clean exit on terminate", o)
	}
	if !strings.Contains(out.String(), `"event":"complete","oid":"`+oid+`"`) || strings.Contains(out.String(), "error") {
		t.Fatalf("answers: %s", out.String())
	}
	if len(paths) != 1 || paths[0] != filepath.Join(dir, "obj") {
		t.Fatalf("uploaded paths %q, want the follower's %s", paths, filepath.Join(dir, "obj"))
	}

	batch := fmt.Sprintf(`{"event":"upload","oid":%q,"size":5000,"path":"obj","action":{"href":"https://lfs.example/x"}}`+"\n", oid)
	out.Reset()
	o = ServePipe(context.Background(), f, serves, Init{Operation: "upload", Remote: "origin"}, zerolog.Nop(), &share.Pipe{In: strings.NewReader(batch + terminate), Out: &out, Dir: dir, Pid: 43})
	if o.Exit || !o.Stay || string(o.Resume) != batch+terminate {
		t.Fatalf("outcome %+v (resume %q), want the conversation back from the batch request on", o, o.Resume)
	}
	if out.Len() != 0 || len(paths) != 1 {
		t.Fatalf("answered a request it gave back: %s", out.String())
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
