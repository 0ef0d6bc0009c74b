package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestWindowsPaths: git-lfs for Windows sends upload paths with backslashes (JSON-escaped, spaces
// and all) and reads the path of a download's complete the same way; both pass through unchanged.
func TestWindowsPaths(t *testing.T) {
	const oid = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
	const upload = `C:\Users\Ann Lee\repo\.git\lfs\objects\4d\7a\` + oid
	line, _ := json.Marshal(map[string]any{"event": "upload", "oid": oid, "size": 3, "path": upload})
	if !bytes.Contains(line, []byte(`C:\\Users\\Ann Lee`)) {
		t.Fatalf("the request does not escape backslashes as git-lfs does: %s", line)
	}
	d := NewDecoder(bytes.NewReader(append(line, '\n')))
	r, err := d.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != upload {
		t.Fatalf("upload path %q, want %q", r.Path, upload)
	}

	const download = `D:\tmp\xet download\` + oid
	var out bytes.Buffer
	if err := NewEncoder(&out).Complete(oid, download); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "\n") || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("complete is not one line: %q", out.String())
	}
	var c Complete
	if err := json.Unmarshal(out.Bytes(), &c); err != nil || c.Path != download {
		t.Fatalf("complete %q read back as %+v, %v", out.String(), c, err)
	}
}
