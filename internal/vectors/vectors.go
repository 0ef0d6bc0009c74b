// Package vectors loads the reference test data (xet-vectors.txt and the reference files beside
// it, in the directory Dir names) for the format packages' tests.
package vectors

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Dir returns the reference data directory: $XET_REFERENCE_DIR, else shared/testdata/reference in
// the directory that holds the checkout. When it is missing the test is skipped with a message saying where it was
// looked for, except under CI=true, where the data is always there and its absence fails the test.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := find()
	if err != nil {
		missing(t, err)
	}
	return d
}

// find locates the reference data directory.
func find() (string, error) {
	d := os.Getenv("XET_REFERENCE_DIR")
	if d == "" {
		_, file, _, _ := runtime.Caller(0)
		// file is <repo>/internal/vectors/vectors.go
		repo := filepath.Join(filepath.Dir(file), "..", "..")
		d = filepath.Join(repo, "..", "shared", "testdata", "reference")
	}
	if _, err := os.Stat(filepath.Join(d, "xet-vectors.txt")); err != nil {
		return "", fmt.Errorf("reference data not found at %s (put ../shared beside the checkout, or set XET_REFERENCE_DIR): %w", d, err)
	}
	return d, nil
}

// missing skips t for missing reference data, or fails it under CI=true.
func missing(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v (CI=true: the reference data must be there)", err)
	}
	t.Skipf("skipped: %v", err)
}

// ReadFile reads a reference file by name, failing the test on error.
func ReadFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(t), name))
	if err != nil {
		t.Fatalf("reading reference file: %v", err)
	}
	return b
}

// Lines returns the non-comment lines of xet-vectors.txt whose first field is kind, split into fields.
func Lines(t testing.TB, kind string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(Dir(t), "xet-vectors.txt"))
	if err != nil {
		t.Fatalf("opening xet-vectors.txt: %v", err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) > 0 && fields[0] == kind {
			out = append(out, fields)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading xet-vectors.txt: %v", err)
	}
	if len(out) == 0 {
		t.Fatalf("xet-vectors.txt has no %s lines", kind)
	}
	return out
}

// Field returns the value of "name=value" among fields, failing the test when it is absent.
func Field(t testing.TB, fields []string, name string) string {
	t.Helper()
	for _, f := range fields {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	t.Fatalf("vector line %v has no %s=", fields, name)
	return ""
}

// Ints parses decimal integers.
func Ints(t testing.TB, fields []string) []int {
	t.Helper()
	out := make([]int, len(fields))
	for i, f := range fields {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("vector %q: %v", f, err)
		}
		out[i] = v
	}
	return out
}

// Gear returns the 256-entry gear table from the GEAR lines.
func Gear(t testing.TB) [256]uint64 {
	t.Helper()
	var table [256]uint64
	n := 0
	for _, l := range Lines(t, "GEAR") {
		for _, f := range l[1:] {
			v, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64)
			if err != nil || n >= 256 {
				t.Fatalf("GEAR entry %q (index %d): %v", f, n, err)
			}
			table[n] = v
			n++
		}
	}
	if n != 256 {
		t.Fatalf("GEAR table has %d entries, want 256", n)
	}
	return table
}

// SplitMix returns n bytes of the SplitMix64 stream of the chunker vectors.
func SplitMix(n int, seed uint64) []byte {
	out := make([]byte, 0, n+8)
	state := seed
	for len(out) < n {
		state += 0x9E3779B97F4A7C15
		z := state
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
		for i := 0; i < 8; i++ {
			out = append(out, byte(z>>(8*i)))
		}
	}
	return out[:n]
}

// Trigger returns the 65536-byte trigger-pattern data for pad: the base pattern, pad zeros, then the
// data so far repeated until it is 65536 bytes long.
func Trigger(base []byte, pad int) []byte {
	const n = 65536
	data := append(append([]byte(nil), base...), make([]byte, pad)...)
	for len(data) < n {
		k := min(n-len(data), len(data))
		data = append(data, data[:k]...)
	}
	return data
}

// Case is one aggregated-hash vector: chunks, xorb hash (absent in some cases), and salted file hashes.
type Case struct {
	Chunks []ChunkLine // hash string and size
	Xorb   string      // "" when the case gives none
	Salted [][2]string // salt, file hash
}

// ChunkLine is a chunk hash string and its size.
type ChunkLine struct {
	Hash string
	Size uint64
}

// Cases returns the AGGREGATED vectors (CASE / C / X / S lines).
func Cases(t testing.TB) []Case {
	t.Helper()
	f, err := os.Open(filepath.Join(Dir(t), "xet-vectors.txt"))
	if err != nil {
		t.Fatalf("opening xet-vectors.txt: %v", err)
	}
	defer f.Close()
	var out []Case
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "CASE":
			out = append(out, Case{})
		case "C", "X", "S":
			if len(out) == 0 {
				t.Fatalf("%s line before CASE", fields[0])
			}
			c := &out[len(out)-1]
			switch fields[0] {
			case "C":
				size, err := strconv.ParseUint(fields[2], 10, 64)
				if err != nil {
					t.Fatalf("C line %v: %v", fields, err)
				}
				c.Chunks = append(c.Chunks, ChunkLine{fields[1], size})
			case "X":
				c.Xorb = fields[1]
			case "S":
				c.Salted = append(c.Salted, [2]string{fields[1], fields[2]})
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("xet-vectors.txt has no CASE vectors")
	}
	return out
}

// ReferenceChunks parses ev-population.csv.chunks: "<hash string> <length>" per line.
func ReferenceChunks(t testing.TB) []ChunkLine {
	t.Helper()
	var out []ChunkLine
	for i, line := range strings.Split(strings.TrimSpace(string(ReadFile(t, "ev-population.csv.chunks"))), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("ev-population.csv.chunks line %d: %q", i+1, line)
		}
		size, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatalf("ev-population.csv.chunks line %d: %v", i+1, err)
		}
		out = append(out, ChunkLine{f[0], size})
	}
	return out
}
