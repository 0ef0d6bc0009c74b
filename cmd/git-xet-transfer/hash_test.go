package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash/hashtest"
)

// hashCmd runs `hash args...` in-process and returns exit code, stdout and stderr.
func hashCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runHash(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// referencePrefix writes the decoded reference xorb records (the first 810,234 bytes of the
// reference CSV) to a file and returns its path and bytes.
func referencePrefix(t *testing.T) (string, []byte) {
	t.Helper()
	var csv []byte
	err := testutil.DecodeRecords(vectors.ReadFile(t, "ev-population.xorb.first-10-chunks"), func(_ int, raw []byte) error {
		csv = append(csv, raw...)
		return nil
	})
	if err != nil {
		t.Fatalf("decoding reference records: %v", err)
	}
	path := filepath.Join(t.TempDir(), "ev-population-prefix.csv")
	if err := os.WriteFile(path, csv, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, csv
}

func TestHashChunksMatchesReferenceChunksFile(t *testing.T) {
	path, _ := referencePrefix(t)
	code, out, errOut := hashCmd(t, "", "--chunks", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	ref := strings.SplitAfter(string(vectors.ReadFile(t, "ev-population.csv.chunks")), "\n")
	if want := strings.Join(ref[:10], ""); out != want {
		t.Errorf("hash --chunks output:\n%s\nwant the first 10 lines of ev-population.csv.chunks:\n%s", out, want)
	}
}

func TestHashLine(t *testing.T) {
	path, csv := referencePrefix(t)
	var entries []hash.Entry
	for _, line := range strings.Split(string(vectors.ReadFile(t, "ev-population.csv.chunks")), "\n")[:10] {
		var h string
		var size uint64
		if _, err := fmt.Sscanf(line, "%s %d", &h, &size); err != nil {
			t.Fatalf(".chunks line %q: %v", line, err)
		}
		entries = append(entries, hash.Entry{Hash: hashtest.MustParse(h), Size: size})
	}
	sum := sha256.Sum256(csv)
	want := fmt.Sprintf("%s %s %d %s\n", hash.File(entries), hex.EncodeToString(sum[:]), len(csv), path)

	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	emptySum := sha256.Sum256(nil)
	wantEmpty := fmt.Sprintf("%s %s 0 %s\n", strings.Repeat("0", 64), hex.EncodeToString(emptySum[:]), empty)

	code, out, errOut := hashCmd(t, "", path, empty)
	if code != 0 || out != want+wantEmpty || errOut != "" {
		t.Errorf("hash: exit %d, stdout\n%s\nstderr %q; want stdout\n%s", code, out, errOut, want+wantEmpty)
	}

	// stdin as "-".
	code, out, _ = hashCmd(t, string(csv), "-")
	if code != 0 || out != strings.Replace(want, path, "-", 1) {
		t.Errorf("hash - : exit %d, %q", code, out)
	}
	// An empty file has no chunks.
	if code, out, _ := hashCmd(t, "", "--chunks", empty); code != 0 || out != "" {
		t.Errorf("hash --chunks of an empty file: exit %d, %q", code, out)
	}
}

func TestHashErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("Hello World!"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")

	code, out, errOut := hashCmd(t, "", missing, good, dir)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	// The readable file is still hashed; each failure names its file and cause.
	if !strings.Contains(out, " 12 "+good+"\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("stdout %q: want exactly the good file's line", out)
	}
	if !strings.Contains(errOut, missing) || !strings.Contains(errOut, "no such file") {
		t.Errorf("stderr %q does not name %s and its cause", errOut, missing)
	}
	if !strings.Contains(errOut, dir+": is a directory") {
		t.Errorf("stderr %q does not report the directory", errOut)
	}

	if code, _, errOut := hashCmd(t, "", "--chunks", missing); code != 1 || !strings.Contains(errOut, missing) {
		t.Errorf("--chunks of a missing file: exit %d, stderr %q", code, errOut)
	}
	for _, args := range [][]string{{}, {"--chunks"}, {"--chunks", good, good}, {"--bogus", good}} {
		if code, out, errOut := hashCmd(t, "", args...); code != 2 || out != "" || !strings.Contains(errOut, "usage") {
			t.Errorf("hash %q: exit %d, stdout %q, stderr %q; want usage and exit 2", args, code, out, errOut)
		}
	}
	if code, _, _ := hashCmd(t, "", "-h"); code != 0 {
		t.Errorf("hash -h: exit %d, want 0", code)
	}
}

// The hash subcommand is reachable from the command line.
func TestHashDispatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hello")
	if err := os.WriteFile(path, []byte("Hello World!"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"hash", "--chunks", path}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	// The DRAFT vector: chunk hash of "Hello World!".
	if want := "d8d408e608fb9ca213b9909a65d86d725f2de4d8d540324be8a363e7a6e228cb 12\n"; out.String() != want {
		t.Errorf("git-xet-transfer hash --chunks = %q, want %q", out.String(), want)
	}
}
