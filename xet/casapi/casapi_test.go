package casapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
)

// The captured Hub responses decode into our types and re-encode to the same JSON, field for field.
func TestCapturedResponsesRoundTrip(t *testing.T) {
	dir := filepath.Join(vectors.Dir(t), "captured-responses")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) != 5 {
		t.Fatalf("captured responses: %v %v", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if bytes.Contains(raw, []byte(`"fetch_info"`)) {
			v = new(ReconstructionV1)
		} else {
			v = new(ReconstructionV2)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, v); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, raw); err != nil {
			t.Fatal(err)
		}
		got := bytes.TrimSpace(buf.Bytes())
		// Every field survives with its value (map order aside: the Hub keeps insertion order).
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: re-encoded JSON differs:\n%s", filepath.Base(f), got)
		}
		// With one xorb there is no map order to differ: the bytes, field order included, are equal.
		if bytes.Count(raw, []byte(`"url"`)) == 1 && !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: re-encoded JSON is not byte-identical:\n%s", filepath.Base(f), got)
		}
	}
}

func TestFromV1MatchesV2(t *testing.T) {
	var v1 ReconstructionV1
	var v2 ReconstructionV2
	for name, v := range map[string]any{"ev-population-range.v1.json": &v1, "ev-population-range.v2.json": &v2} {
		if err := json.Unmarshal(vectors.ReadFile(t, filepath.Join("captured-responses", name)), v); err != nil {
			t.Fatal(err)
		}
	}
	conv := FromV1(&v1)
	for h, fetches := range v2.Xorbs {
		c := conv.Xorbs[h]
		if len(c) != len(fetches) || c[0].Ranges[0] != fetches[0].Ranges[0] {
			t.Fatalf("FromV1 ranges %+v, v2 %+v", c, fetches)
		}
	}
	if r := (ByteRange{0, 50468}); r.Len() != 50469 || r.Header() != "bytes=0-50468" {
		t.Fatalf("ByteRange %d %s", r.Len(), r.Header())
	}
}
