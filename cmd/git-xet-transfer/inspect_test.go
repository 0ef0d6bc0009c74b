package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash/hashtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// inspectJSON runs inspect and decodes its output as generic JSON (what a script reading it sees).
func inspectJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runInspect(args, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("inspect %v: exit %d: %s", args, code, errb.String())
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("inspect output is not JSON: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "\n  \"kind\"") {
		t.Errorf("output is not indented:\n%.200s", out.String())
	}
	return m
}

// get walks a path of map keys and slice indices.
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("path %v: %T is not an object at %q", path, v, k)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("path %v: no key %q", path, k)
			}
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				t.Fatalf("path %v: no element %d", path, k)
			}
			v = s[k]
		}
	}
	return v
}

func expect(t *testing.T, m map[string]any, want any, path ...any) {
	t.Helper()
	if got := get(t, m, path...); got != want {
		t.Errorf("%v = %v (%T), want %v (%T)", path, got, got, want, want)
	}
}

func TestInspectReferenceShard(t *testing.T) {
	path := filepath.Join(vectors.Dir(t), "ev-population.csv.shard.verification")
	m := inspectJSON(t, path)
	expect(t, m, "shard", "kind")
	expect(t, m, float64(38792), "size")
	expect(t, m, float64(2), "header", "version")
	expect(t, m, float64(200), "header", "footer_size")
	expect(t, m, false, "keyed")
	expect(t, m, "118a53328412787fee04011dcf82fdc4acf3a4a1eddec341c910d30a306aaf97", "files", 0, "hash")
	expect(t, m, "0xc0000000", "files", 0, "flags")
	expect(t, m, float64(63527244), "files", 0, "size")
	expect(t, m, "eea25d6ee393ccae385820daed127b96ef0ea034dfb7cf6da3a950ce334b7632", "files", 0, "terms", 0, "xorb")
	expect(t, m, float64(0), "files", 0, "terms", 0, "chunk_start")
	expect(t, m, float64(796), "files", 0, "terms", 0, "chunk_end")
	expect(t, m, float64(63527244), "files", 0, "terms", 0, "bytes")
	expect(t, m, "d81c11b1fc9bc2a25587108c675bbfe65ca2e5d350b0cd92c58329fcc8444178", "files", 0, "verification", 0)
	expect(t, m, "f41255b252f776125f2b657136654e4d4d5d2ccf8ef4db0ec186bd1981b69734", "files", 0, "sha256")
	expect(t, m, float64(796), "xorbs", 0, "chunk_count")
	expect(t, m, float64(63527244), "xorbs", 0, "bytes_in_xorb")
	ref := vectors.ReferenceChunks(t)
	expect(t, m, ref[795].Hash, "xorbs", 0, "chunks", 795, "hash")
	expect(t, m, float64(ref[1].Size), "xorbs", 0, "chunks", 1, "raw_size")
	expect(t, m, float64(ref[0].Size), "xorbs", 0, "chunks", 1, "raw_start")
	expect(t, m, float64(0), "lookups", "chunks")
	expect(t, m, float64(0), "footer", "created")
	expect(t, m, "1970-01-01T00:00:00Z", "footer", "created_time")
	expect(t, m, float64(1760478341), "footer", "expires")
	expect(t, m, "2025-10-14T21:45:41Z", "footer", "expires_time")
	expect(t, m, float64(38592), "footer", "footer_offset")
	expect(t, m, float64(63527244), "footer", "stored_bytes")
	expect(t, m, "0000000000000000000000000000000000000000000000000000000000000000", "footer", "hmac_key")
}

func TestInspectDedupeAndNoFooter(t *testing.T) {
	m := inspectJSON(t, filepath.Join(vectors.Dir(t), "ev-population.csv.shard.dedupe"))
	expect(t, m, true, "keyed")
	expect(t, m, float64(0), "totals", "files")
	if !strings.HasPrefix(get(t, m, "footer", "hmac_key").(string), "12345678") {
		t.Errorf("hmac_key %v", get(t, m, "footer", "hmac_key"))
	}
	expect(t, m, float64(1758663941), "footer", "created")

	// Read from stdin, -summary: counts but no chunk lists.
	var out, errb bytes.Buffer
	in := bytes.NewReader(vectors.ReadFile(t, "ev-population.csv.shard.verification-no-footer"))
	if code := runInspect([]string{"-summary", "-"}, in, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var nf map[string]any
	if err := json.Unmarshal(out.Bytes(), &nf); err != nil {
		t.Fatal(err)
	}
	expect(t, nf, float64(0), "header", "footer_size")
	expect(t, nf, nil, "footer")
	expect(t, nf, float64(796), "xorbs", 0, "chunk_count")
	if _, ok := get(t, nf, "xorbs", 0).(map[string]any)["chunks"]; ok {
		t.Error("-summary printed the chunk list")
	}
}

func TestInspectReferenceXorb(t *testing.T) {
	path := filepath.Join(vectors.Dir(t), "ev-population.xorb.first-10-chunks")
	m := inspectJSON(t, path)
	ref := vectors.ReferenceChunks(t)[:10]
	entries := make([]hash.Entry, len(ref))
	var raw uint64
	for i, c := range ref {
		entries[i] = hash.Entry{Hash: hashtest.MustParse(c.Hash), Size: c.Size}
		raw += c.Size
	}
	expect(t, m, "xorb", "kind")
	expect(t, m, float64(170626), "size")
	expect(t, m, float64(170626), "records_bytes")
	expect(t, m, float64(10), "chunk_count")
	expect(t, m, float64(810234), "raw_bytes")
	expect(t, m, hash.Merkle(entries).String(), "hash")
	expect(t, m, false, "footer", "present")
	expect(t, m, float64(10), "schemes", "lz4")
	for i, c := range ref {
		expect(t, m, c.Hash, "chunks", i, "hash")
		expect(t, m, float64(c.Size), "chunks", i, "raw_size")
		expect(t, m, "lz4", "chunks", i, "scheme")
	}
	expect(t, m, float64(0), "chunks", 0, "offset")
	end0 := get(t, m, "chunks", 0, "end").(float64)
	expect(t, m, end0, "chunks", 1, "offset")
	expect(t, m, end0-8, "chunks", 0, "compressed_size")
	expect(t, m, float64(ref[0].Size), "chunks", 1, "raw_offset")
}

// writeTemp writes b to a file in a test directory.
func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInspectXorbWithFooter(t *testing.T) {
	b := xorb.NewBuilder(xorb.PolicyLZ4)
	for i := 0; i < 3; i++ {
		data := bytes.Repeat([]byte{byte('a' + i)}, 10000+i)
		b.Add(data, hash.Chunk(data))
	}
	x := b.Finish()
	obj := x.Footer().AppendTo(append([]byte(nil), x.Body...))
	m := inspectJSON(t, writeTemp(t, "x.xorb", obj))
	expect(t, m, x.Hash.String(), "hash")
	expect(t, m, true, "footer", "present")
	expect(t, m, float64(1), "footer", "version")
	expect(t, m, true, "footer", "hash_matches")
	expect(t, m, float64(len(x.Body)), "records_bytes")
	expect(t, m, float64(3), "chunk_count")

	// A footer whose hash is wrong is shown, not refused.
	f := x.Footer()
	f.Hash = hash.Hash{1}
	bad := f.AppendTo(append([]byte(nil), x.Body...))
	m = inspectJSON(t, writeTemp(t, "bad.xorb", bad))
	expect(t, m, false, "footer", "hash_matches")
	expect(t, m, x.Hash.String(), "hash")
	if p, _ := get(t, m, "footer", "problem").(string); p == "" {
		t.Error("no problem reported for a footer with the wrong hash")
	}
}

func TestInspectLocalShard(t *testing.T) {
	s := &shard.Shard{Xorbs: []shard.Xorb{{Hash: hash.Hash{7}, BytesInXorb: 5, Chunks: []shard.XorbChunk{{Hash: hash.Hash{8}, RawLen: 5, Flags: shard.ChunkFlagGlobalDedupe}}}}}
	m := inspectJSON(t, writeTemp(t, "l.shard", s.AppendLocal(nil, 1700000000, ^uint64(0))))
	expect(t, m, float64(1), "lookups", "chunks")
	expect(t, m, float64(1), "lookups", "xorbs")
	expect(t, m, "2023-11-14T22:13:20Z", "footer", "created_time")
	expect(t, m, "never", "footer", "expires_time")
	expect(t, m, float64(shard.ChunkFlagGlobalDedupe), "xorbs", 0, "chunks", 0, "flags")
	expect(t, m, true, "xorbs", 0, "chunks", 0, "global_dedupe")
}

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("hello, this is not a xorb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ref := vectors.ReadFile(t, "ev-population.csv.shard")
	broken := filepath.Join(dir, "broken.shard")
	if err := os.WriteFile(broken, ref[:1000], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{text}, 1, "not a xorb or shard: " + text},
		{[]string{empty}, 1, "not a xorb or shard: " + empty + " is empty"},
		{[]string{broken}, 1, "shard: "},
		{[]string{filepath.Join(dir, "missing")}, 1, "no such file"},
		{nil, 2, "usage"},
		{[]string{"a", "b"}, 2, "usage"},
	} {
		var out, errb bytes.Buffer
		code := runInspect(tc.args, strings.NewReader(""), &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("inspect %v: exit %d, stderr %q; want %d and %q", tc.args, code, errb.String(), tc.code, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("inspect %v wrote to stdout on error: %q", tc.args, out.String())
		}
	}
}
