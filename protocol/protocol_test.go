package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
)

func decodeAll(t *testing.T, in string) ([]*Request, error) {
	t.Helper()
	d := NewDecoder(strings.NewReader(in))
	var out []*Request
	for {
		r, err := d.Decode()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
}

// The lines git-lfs 3.8.1 sent to a standalone agent on a push to a local remote.
func TestDecodeGitLFSStandaloneUpload(t *testing.T) {
	b, err := os.ReadFile("testdata/gitlfs-3.8.1-upload.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := decodeAll(t, string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want 3", len(reqs))
	}
	in := reqs[0]
	if in.Event != EventInit || in.Operation != OperationUpload || in.Remote != "origin" || !in.Concurrent || in.ConcurrentTransfers != 8 {
		t.Errorf("init = %+v", in)
	}
	up := reqs[1]
	if up.Event != EventUpload || up.Size != 1000 || up.Action != nil ||
		up.Oid != "dfd7202e6de198763f6c351e71f84e8c6746b5d43833798a9c217de068c4aa9f" ||
		!strings.HasSuffix(up.Path, "/dfd7202e6de198763f6c351e71f84e8c6746b5d43833798a9c217de068c4aa9f") {
		t.Errorf("upload = %+v", up)
	}
	if reqs[2].Event != EventTerminate {
		t.Errorf("last = %+v", reqs[2])
	}
}

func TestDecodeBatchDownloadIgnoresUnknownFields(t *testing.T) {
	b, err := os.ReadFile("testdata/batch-download.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := decodeAll(t, string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want 3 (blank line skipped)", len(reqs))
	}
	dl := reqs[1]
	if dl.Event != EventDownload || dl.Path != "" || dl.Size != 21245 || dl.Action == nil {
		t.Fatalf("download = %+v", dl)
	}
	if dl.Action.Href != "https://example.test/api/models/r/xet-read-token/main" ||
		dl.Action.Header["X-Xet-Cas-Url"] != "https://cas.example.test" ||
		dl.Action.Header["X-Xet-Hash"] != "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff" {
		t.Errorf("action = %+v", dl.Action)
	}
}

func TestDecodeMalformed(t *testing.T) {
	oid := strings.Repeat("ab", 32)
	cases := []struct{ name, line, want string }{
		{"not json", "hello", "not a JSON object"},
		{"no event", `{"oid":"x"}`, `no "event" field`},
		{"unknown event", `{"event":"fly"}`, `unknown event "fly"`},
		{"bad operation", `{"event":"init","operation":"copy"}`, `operation "copy"`},
		{"short oid", `{"event":"upload","oid":"abc","size":1,"path":"/x"}`, `oid "abc"`},
		{"upper oid", `{"event":"download","oid":"` + strings.ToUpper(oid) + `","size":1}`, "64 lowercase hex"},
		{"negative size", `{"event":"download","oid":"` + oid + `","size":-1}`, "size -1"},
		{"upload without path", `{"event":"upload","oid":"` + oid + `","size":1}`, "has no path"},
		{"wrong type", `{"event":"upload","oid":"` + oid + `","size":"big","path":"/x"}`, "not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewDecoder(strings.NewReader(c.line + "\n")).Decode()
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want *MalformedError", err)
			}
			if me.Line != 1 || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "line 1") {
				t.Errorf("err = %q, want it to contain %q and line 1", err, c.want)
			}
		})
	}
}

func TestDecodeContinuesAfterMalformed(t *testing.T) {
	d := NewDecoder(strings.NewReader("junk\n{\"event\":\"terminate\"}\n"))
	if _, err := d.Decode(); err == nil {
		t.Fatal("junk accepted")
	}
	r, err := d.Decode()
	if err != nil || r.Event != EventTerminate {
		t.Fatalf("next = %+v, %v", r, err)
	}
	if _, err := d.Decode(); !errors.Is(err, io.EOF) {
		t.Fatalf("end = %v, want io.EOF", err)
	}
}

func TestDecodeOverlongLine(t *testing.T) {
	in := `{"event":"init","operation":"upload","remote":"` + strings.Repeat("x", MaxLineLength) + "\"}\n" + `{"event":"terminate"}` + "\n"
	d := NewDecoder(strings.NewReader(in))
	_, err := d.Decode()
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err = %v, want line too long", err)
	}
	r, err := d.Decode()
	if err != nil || r.Event != EventTerminate {
		t.Fatalf("after overlong line: %+v, %v", r, err)
	}
}

func TestDecodeLastLineWithoutNewline(t *testing.T) {
	r, err := NewDecoder(strings.NewReader(`{"event":"terminate"}`)).Decode()
	if err != nil || r.Event != EventTerminate {
		t.Fatalf("%+v, %v", r, err)
	}
	_, err = NewDecoder(strings.NewReader(`{"event":"termi`)).Decode()
	var me *MalformedError
	if !errors.As(err, &me) {
		t.Fatalf("truncated line: err = %v", err)
	}
}

func TestMalformedErrorRedactsTokens(t *testing.T) {
	line := `{"event":"download","oid":"x","action":{"header":{"X-Xet-Access-Token":"sekrit","Authorization":"Bearer hush"}}}`
	_, err := NewDecoder(strings.NewReader(line + "\n")).Decode()
	if err == nil {
		t.Fatal("accepted")
	}
	if strings.Contains(err.Error(), "sekrit") || strings.Contains(err.Error(), "hush") {
		t.Errorf("error leaks a token: %v", err)
	}
}

// gitLFSResponse mirrors git-lfs's customAdapterResponseMessage (tq/custom.go).
type gitLFSResponse struct {
	Event string `json:"event"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Oid            string `json:"oid"`
	Path           string `json:"path,omitempty"`
	BytesSoFar     int64  `json:"bytesSoFar"`
	BytesSinceLast int    `json:"bytesSinceLast"`
}

func TestEncoderShapes(t *testing.T) {
	var buf bytes.Buffer
	e := NewEncoder(&buf)
	oid := strings.Repeat("0f", 32)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.InitOK())
	must(e.InitError("no store"))
	must(e.Progress(oid, 1, 1))
	must(e.Complete(oid, "/tmp/x"))
	must(e.CompleteError(oid, "boom"))
	want := `{}
{"error":{"code":32,"message":"no store"}}
{"event":"progress","oid":"` + oid + `","bytesSoFar":1,"bytesSinceLast":1}
{"event":"complete","oid":"` + oid + `","path":"/tmp/x"}
{"event":"complete","oid":"` + oid + `","error":{"code":2,"message":"boom"}}
`
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
	// git-lfs reads each line into its own response struct.
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var r gitLFSResponse
	if err := json.Unmarshal([]byte(lines[4]), &r); err != nil || r.Event != "complete" || r.Error == nil || r.Error.Code != 2 || r.Oid != oid {
		t.Errorf("git-lfs reads %+v, %v", r, err)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("broken pipe")
}

func TestEncoderStopsAfterWriteError(t *testing.T) {
	fw := &failWriter{}
	e := NewEncoder(fw)
	if err := e.InitOK(); err == nil || !strings.Contains(err.Error(), "git-lfs") {
		t.Fatalf("err = %v", err)
	}
	if err := e.Complete(strings.Repeat("0", 64), ""); err == nil {
		t.Fatal("second write succeeded")
	}
	if fw.n != 1 {
		t.Errorf("wrote %d times after a failure, want 1", fw.n)
	}
}

// Lines written from many goroutines stay whole (run with -race).
func TestEncoderConcurrentLinesStayWhole(t *testing.T) {
	var buf bytes.Buffer
	e := NewEncoder(&buf)
	oid := strings.Repeat("ab", 32)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if err := e.Progress(oid, int64(i+1), 1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1600 {
		t.Fatalf("got %d lines, want 1600", len(lines))
	}
	for _, l := range lines {
		var p Progress
		if err := json.Unmarshal([]byte(l), &p); err != nil || p.Event != EventProgress || p.Oid != oid {
			t.Fatalf("torn line %q: %v", l, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"testdata/gitlfs-3.8.1-upload.jsonl", "testdata/batch-download.jsonl"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("{\"event\":\"upload\"}\n\n{"))
	f.Fuzz(func(t *testing.T, in []byte) {
		d := NewDecoder(bytes.NewReader(in))
		for i := 0; i < 1000; i++ {
			r, err := d.Decode()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				var me *MalformedError
				if !errors.As(err, &me) {
					t.Fatalf("error of type %T: %v", err, err)
				}
				continue
			}
			switch r.Event {
			case EventUpload, EventDownload:
				if !lfsobject.ValidOid(r.Oid) || r.Size < 0 {
					t.Fatalf("invalid request accepted: %+v", r)
				}
			}
		}
	})
}

func TestMalformedKeepsOidWhenValid(t *testing.T) {
	oid := strings.Repeat("cd", 32)
	_, err := NewDecoder(strings.NewReader(`{"event":"upload","oid":"` + oid + `","size":3}` + "\n")).Decode()
	var me *MalformedError
	if !errors.As(err, &me) || me.Oid != oid || me.Event != EventUpload {
		t.Fatalf("err = %#v", err)
	}
}

// writeCounter records each Write.
type writeCounter struct{ writes []string }

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes = append(w.writes, string(b))
	return len(b), nil
}

// Complete with progress before it sends both lines in one Write (git-lfs reads whole lines, and a
// write per line woke it once per line).
func TestCompleteWithProgressIsOneWrite(t *testing.T) {
	var w writeCounter
	enc := NewEncoder(&w)
	oid := strings.Repeat("ab", 32)
	if err := enc.Complete(oid, "/tmp/x", Progress{Event: EventProgress, Oid: oid, BytesSoFar: 5, BytesSinceLast: 5}); err != nil {
		t.Fatal(err)
	}
	want := `{"event":"progress","oid":"` + oid + `","bytesSoFar":5,"bytesSinceLast":5}` + "\n" +
		`{"event":"complete","oid":"` + oid + `","path":"/tmp/x"}` + "\n"
	if len(w.writes) != 1 || w.writes[0] != want {
		t.Fatalf("writes %q, want one: %q", w.writes, want)
	}
}

// errReader returns its bytes, then err once, then the rest: a read cut by a deadline.
type errReader struct {
	parts [][]byte
	err   error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	b := r.parts[0]
	if b == nil {
		r.parts = r.parts[1:]
		return 0, r.err
	}
	n := copy(p, b)
	if n == len(b) {
		r.parts = r.parts[1:]
	} else {
		r.parts[0] = b[n:]
	}
	return n, nil
}

// Remaining gives what was read and not decoded: a line a read error cut short stays, and decoding
// goes on from it; UnreadLast puts the last request back in front. An agent handing its
// conversation to another process (agent/share) hands exactly these bytes over.
func TestDecoderRemaining(t *testing.T) {
	up := `{"event":"upload","oid":"` + strings.Repeat("a", 64) + `","size":1,"path":"/x"}` + "\n"
	stop := errors.New("deadline")
	r := &errReader{parts: [][]byte{[]byte(up), []byte(up[:20]), nil, []byte(up[20:]), []byte("{\"event\":")}, err: stop}
	d := NewDecoder(r)
	if req, err := d.Decode(); err != nil || req.Event != EventUpload {
		t.Fatalf("first request: %+v, %v", req, err)
	}
	if _, err := d.Decode(); !errors.Is(err, stop) {
		t.Fatalf("got %v, want the read error", err)
	}
	if got := string(d.Remaining()); got != up[:20] {
		t.Fatalf("remaining %q after a cut read, want %q", got, up[:20])
	}
	if req, err := d.Decode(); err != nil || req.Oid != strings.Repeat("a", 64) {
		t.Fatalf("the cut request did not decode once the rest came: %+v, %v", req, err)
	}
	d.UnreadLast()
	if got := string(d.Remaining()); !strings.HasPrefix(got, up) {
		t.Fatalf("remaining %q after UnreadLast, want the last request first", got)
	}
	if req, err := d.Decode(); err != nil || req.Event != EventUpload {
		t.Fatalf("the request put back: %+v, %v", req, err)
	}
}
