package agent

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"

	"github.com/rs/zerolog"
)

// objectKeys returns the keys of a JSON object in order, duplicates included.
func objectKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("log line %q is not a JSON object: %v", line, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
	}
	return keys
}

// The per-file log line is what users grep and feed to log tools: one JSON object with the fields the
// README lists, and no key twice (a duplicate "time" once shadowed zerolog's timestamp).
func TestPerFileLogLineHasUniqueDocumentedFields(t *testing.T) {
	var logs logbuf.Buffer
	log := zerolog.New(&logs).With().Timestamp().Logger()
	f := &fake{upload: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		progress(obj.Size)
		return Result{Mode: "embedded", NewBytes: 7, DedupedBytes: obj.Size - 7}, nil
	}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, outW, Options{
			Open:             func(ctx context.Context, init Init) (Transferer, error) { return f, nil },
			Log:              log,
			ProgressInterval: 10 * time.Millisecond,
		})
		outW.Close()
	}()
	go io.Copy(io.Discard, outR)
	for _, l := range []string{initUpload, uploadLine(oidN(1), 100), `{"event":"terminate"}`} {
		if _, err := io.WriteString(inW, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not exit")
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"transfer complete"`) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no per-file log line in:\n%s", logs.String())
	}
	seen := map[string]bool{}
	for _, k := range objectKeys(t, line) {
		if seen[k] {
			t.Errorf("key %q appears twice in %s", k, line)
		}
		seen[k] = true
	}
	for _, k := range []string{"op", "mode", "oid", "size", "new_bytes", "deduped_bytes", "elapsed_ms", "time"} {
		if !seen[k] {
			t.Errorf("per-file log line lacks %q: %s", k, line)
		}
	}
}
