package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
)

// Differential test against xet-core's own chunker and hashers (the oracle: the Rust code built
// to wasm, run by node, whose sources oracleDir reads from shared/tools/xet-oracle beside the
// checkout). For every file of a generated corpus, `hash --chunks` must
// print exactly what `oracle.mjs chunks` prints, and the file hash of `hash` must equal
// `oracle.mjs file`. Needs node and npm (and the npm registry once, to set the oracle up in the
// user cache dir); skipped without them unless CI=true.

// oracleDir returns a ready copy of the oracle (npm-installed), set up once per machine in the
// user cache directory and reused.
func oracleDir(t *testing.T) string {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	unavailable := func(format string, args ...any) {
		t.Helper()
		if ci {
			t.Fatalf("xet oracle unavailable (CI=true): "+format, args...)
		}
		t.Skipf("xet oracle unavailable: "+format, args...)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable("%s not found", tool)
		}
	}
	_, file, _, _ := runtime.Caller(0) // <repo>/cmd/git-xet-transfer/hash_oracle_test.go
	src := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "tools", "xet-oracle")
	if d := os.Getenv("XET_ORACLE_SRC"); d != "" {
		src = d
	}
	files := []string{"package.json", "oracle.mjs"}
	sum := sha256.New()
	contents := map[string][]byte{}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatalf("reading the oracle source: %v", err)
		}
		contents[name] = b
		sum.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "git-xet-transfer-test", "xet-oracle-"+hex.EncodeToString(sum.Sum(nil))[:12])
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
		return dir
	}
	// Install into a fresh directory and rename it into place, so concurrent test runs never see
	// a half-installed copy.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "installing-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range contents {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable("npm install: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "node_modules")); statErr != nil {
			t.Fatalf("installing the oracle: %v", err)
		} // another run installed it first
	}
	return dir
}

// oracle runs `node oracle.mjs mode path` and returns its stdout.
func oracle(dir, mode, path string) (string, error) {
	cmd := exec.Command("node", filepath.Join(dir, "oracle.mjs"), mode, path)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("oracle %s %s: %v: %s", mode, filepath.Base(path), err, errOut.String())
	}
	return out.String(), nil
}

// oracleCorpus writes the differential corpus to dir and returns the file paths.
func oracleCorpus(t *testing.T, dir string) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(2024, 11))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	text := func(n int) []byte {
		var buf bytes.Buffer
		words := []string{"tesla", "model", "2021", "seattle", "WA", "98101", "electric", "BEV", "eligible", "0", "king", "POINT (-122.3 47.6)"}
		for row := 0; buf.Len() < n; row++ {
			fmt.Fprintf(&buf, "%d", rng.Uint32())
			for range 8 {
				buf.WriteString("," + words[rng.IntN(len(words))])
			}
			buf.WriteByte('\n')
		}
		return buf.Bytes()[:n]
	}
	float32s := func(n int) []byte {
		b := make([]byte, n)
		for i := 0; i+4 <= n; i += 4 {
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(rng.NormFloat64()*0.02)))
		}
		return b
	}
	repeated := func(n, period int) []byte {
		p := random(period)
		return bytes.Repeat(p, n/period+1)[:n]
	}
	files := map[string][]byte{}
	for _, n := range []int{0, 1, 8191, 8192, 8193, 131071, 131072, 131073, 8192 + 131072, 1 << 20} {
		files[fmt.Sprintf("random-%d", n)] = random(n)
	}
	files["zeros-1M"] = make([]byte, 1<<20+5)
	files["text-3M"] = text(3 << 20)
	files["float32-2M"] = float32s(2<<20 + 2)
	files["repeat-1000"] = repeated(1<<20, 1000)
	files["repeat-4096"] = repeated(1<<20, 4096)
	files["repeat-70000"] = repeated(1<<20, 70000)
	lowEntropy := random(2 << 20)
	for i := range lowEntropy {
		lowEntropy[i] &= 1
	}
	files["low-entropy-2M"] = lowEntropy
	// A large file of mixed content: text, random, zeros and tensors in 1 MiB pieces.
	big := 24 << 20
	if testing.Short() {
		big = 6 << 20
	}
	var mixed []byte
	for i := 0; len(mixed) < big; i++ {
		switch i % 4 {
		case 0:
			mixed = append(mixed, text(1<<20-i)...)
		case 1:
			mixed = append(mixed, random(1<<20+i)...)
		case 2:
			mixed = append(mixed, make([]byte, 300000+i)...)
		default:
			mixed = append(mixed, float32s(1<<20)...)
		}
	}
	files[fmt.Sprintf("mixed-%dM", big>>20)] = mixed[:big]

	// Planted boundaries: a 64-byte window after which the gear hash matches the mask, placed so
	// that it ends at chosen chunk lengths around MinSize (where xet-core starts hashing at 8127
	// and ignores matches below 8192) and MaxSize.
	w := matchingWindow(rng)
	plant := func(ends ...int) []byte {
		b := random(ends[len(ends)-1] + 50000)
		for _, e := range ends {
			copy(b[e-len(w):e], w)
		}
		return b
	}
	for _, end := range []int{8127, 8128, 8191, 8192, 8193, 131071, 131072} {
		files[fmt.Sprintf("planted-%d", end)] = plant(end)
	}
	files["planted-8191-8192"] = plant(8191, 8192)
	files["planted-8128-8200"] = plant(8128, 8200)
	files["planted-dense"] = plant(5000, 8192, 8192+4000, 8192+8191, 8192+8192, 30000, 30000+8192, 200000)

	var paths []string
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// matchingWindow finds 64 random bytes after which the gear hash (of those bytes only: it
// depends on no earlier byte) has the mask bits zero, i.e. a chunk boundary wherever it ends.
func matchingWindow(rng *rand.Rand) []byte {
	w := make([]byte, 64)
	for {
		for i := range w {
			w[i] = byte(rng.Uint32())
		}
		var h uint64
		for _, b := range w {
			h = h<<1 + chunk.Gear[b]
		}
		if h&chunk.Mask == 0 {
			return w
		}
	}
}

func TestHashAgainstXetCoreOracle(t *testing.T) {
	dir := oracleDir(t)
	paths := oracleCorpus(t, t.TempDir())

	type result struct{ chunks, file string }
	want := make([]result, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, p := range paths {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var err1, err2 error
			want[i].chunks, err1 = oracle(dir, "chunks", p)
			want[i].file, err2 = oracle(dir, "file", p)
			if err1 != nil {
				errs[i] = err1
			} else {
				errs[i] = err2
			}
		})
	}
	wg.Wait()

	for i, p := range paths {
		name := filepath.Base(p)
		if errs[i] != nil {
			t.Fatalf("%s: %v", name, errs[i])
		}
		code, got, errOut := hashCmd(t, "", "--chunks", p)
		if code != 0 {
			t.Fatalf("%s: hash --chunks exit %d: %s", name, code, errOut)
		}
		if got != want[i].chunks {
			gl, wl := strings.Split(got, "\n"), strings.Split(want[i].chunks, "\n")
			for j := 0; j < len(gl) || j < len(wl); j++ {
				if j >= len(gl) || j >= len(wl) || gl[j] != wl[j] {
					t.Errorf("%s: chunk line %d: ours %q, xet-core %q (ours %d lines, xet-core %d)",
						name, j+1, at(gl, j), at(wl, j), len(gl)-1, len(wl)-1)
					break
				}
			}
		}
		code, got, errOut = hashCmd(t, "", p)
		if code != 0 {
			t.Fatalf("%s: hash exit %d: %s", name, code, errOut)
		}
		// ours: "<file hash> <sha256> <size> <path>"; oracle: "<file hash> <size>".
		f := strings.Fields(got)
		w := strings.Fields(want[i].file)
		if len(f) != 4 || len(w) != 2 || f[0] != w[0] || f[2] != w[1] {
			t.Errorf("%s: hash printed %q, xet-core file hash and size %q", name, got, want[i].file)
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<none>"
}
