package xorb

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
)

func TestBG4SplitRegroup(t *testing.T) {
	// Lengths 0..9 by hand: the first len%4 groups get the extra byte.
	src := []byte("abcdefghi")
	want := []string{"", "a", "ab", "abc", "abcd", "aebcd", "aebfcd", "aebfcgd", "aebfcgdh", "aeibfcgdh"}
	for n := 0; n <= 9; n++ {
		got := BG4Split(nil, src[:n])
		if string(got) != want[n] {
			t.Errorf("BG4Split(%q) = %q, want %q", src[:n], got, want[n])
		}
		if back := BG4Regroup(nil, got); string(back) != string(src[:n]) {
			t.Errorf("BG4Regroup(%q) = %q, want %q", got, back, src[:n])
		}
	}
	// Longer inputs of every residue, appended after existing bytes, against the definition.
	for _, n := range []int{15, 16, 17, 18, 19, 20, 33, 1000, 1001, 1002, 1003, 131072} {
		data := vectors.SplitMix(n, uint64(n))
		var naive []byte
		for k := 0; k < 4; k++ {
			for i := k; i < n; i += 4 {
				naive = append(naive, data[i])
			}
		}
		s := BG4Split([]byte("pre"), data)
		if !bytes.Equal(s[3:], naive) {
			t.Errorf("%d: split differs from the definition", n)
		}
		if string(s[:3]) != "pre" || len(s) != n+3 {
			t.Fatalf("%d: split clobbered dst or has length %d", n, len(s))
		}
		q, r := n/4, n%4
		if s[3+q+min(r, 1)] != data[1] {
			t.Errorf("%d: group 1 does not start with byte 1", n)
		}
		back := BG4Regroup([]byte("x"), s[3:])
		if back[0] != 'x' || !bytes.Equal(back[1:], data) {
			t.Errorf("%d: regroup does not invert split", n)
		}
	}
}

func TestBG4Predictor(t *testing.T) {
	if BG4Recommended(csvText(65536, 1)) {
		t.Errorf("CSV text: BG4 recommended")
	}
	if kl := bg4MaxKL(csvText(65536, 1)); kl != 0 {
		t.Errorf("CSV text (no 0xFF bytes, so every group has an empty bin): kl %v, want 0", kl)
	}
	if !BG4Recommended(float32Data(65536, 2)) {
		t.Errorf("float32 weights: BG4 not recommended (kl %v)", bg4MaxKL(float32Data(65536, 2)))
	}
	if !BG4Recommended(halfData(65536, 3)) {
		t.Errorf("bf16 weights: BG4 not recommended (kl %v)", bg4MaxKL(halfData(65536, 3)))
	}
	if BG4Recommended(vectors.SplitMix(65536, 4)) {
		t.Errorf("random bytes: BG4 recommended (kl %v)", bg4MaxKL(vectors.SplitMix(65536, 4)))
	}
	if BG4Recommended(nil) || BG4Recommended([]byte{1, 2, 3}) {
		t.Errorf("tiny input: BG4 recommended")
	}

	// NaN handling: group 0 holds random bytes (all 9 popcounts), groups 1-3 only zeros, so their KL
	// is NaN (0·ln 0) and must be ignored rather than poison the maximum. Group 0 diverges a lot.
	r := vectors.SplitMix(16384, 5)
	data := make([]byte, 4*len(r))
	for i, b := range r {
		data[4*i] = b
	}
	kl := bg4MaxKL(data)
	if math.IsNaN(kl) || kl <= bg4Threshold {
		t.Errorf("one full group and three NaN groups: kl %v, want the full group's divergence", kl)
	}
	if !BG4Recommended(data) {
		t.Errorf("one full group and three NaN groups: not recommended")
	}
	// Reference by hand for that group: p = its popcount distribution, q = pooled with +1 prior over
	// a total without the prior.
	var hist [9]float64
	for _, b := range r {
		hist[popcount(b)]++
	}
	total := float64(len(r))
	var want float64
	for j, c := range hist {
		base := c + 1
		if j == 0 {
			base += 3 * total
		}
		p, q := c/total, base/(4*total)
		want += p * math.Log(p/q)
	}
	if math.Abs(kl-want) > 1e-12 {
		t.Errorf("kl %v, want %v", kl, want)
	}
	// A constant chunk: every group is NaN; nothing diverges.
	if kl := bg4MaxKL(bytes.Repeat([]byte{0x0F}, 4096)); kl != 0 {
		t.Errorf("constant data kl %v, want 0", kl)
	}
}

func popcount(b byte) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// histByByte is bg4Hist's definition: one increment per byte.
func histByByte(chunk []byte) (hist [4][9]uint32) {
	for i, c := range chunk {
		hist[i%4][bits.OnesCount8(c)]++
	}
	return hist
}

// The packed counters give the definition's histograms: runs that fill a field to its limit (every
// byte in one bin, 0x00 and 0xFF), lengths around a run's end and of every residue, real data.
func TestBG4HistMatchesDefinition(t *testing.T) {
	inputs := map[string][]byte{
		"zeros": make([]byte, 65536+3),
		"ones":  bytes.Repeat([]byte{0xFF}, 4*packRun*3+2),
		"csv":   csvText(65536, 1),
		"f32":   float32Data(65536, 2),
		"bf16":  halfData(65536, 3),
	}
	for _, n := range []int{0, 1, 3, 4, 5, 4*packRun - 1, 4 * packRun, 4*packRun + 1, 4*packRun + 7, 131072} {
		inputs[fmt.Sprintf("random-%d", n)] = vectors.SplitMix(n, uint64(n)+9)
	}
	for name, in := range inputs {
		if got, want := bg4Hist(in), histByByte(in); got != want {
			t.Errorf("%s: bg4Hist = %v, want %v", name, got, want)
		}
	}
}

func FuzzBG4Hist(f *testing.F) {
	f.Add([]byte("abcdefg"))
	f.Add(bytes.Repeat([]byte{0xFF, 0x00, 0x0F}, 700))
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := bg4Hist(in), histByByte(in); got != want {
			t.Fatalf("bg4Hist(%d bytes) = %v, want %v", len(in), got, want)
		}
	})
}

// BenchmarkBG4Hist: the packed counters against the definition's loop, on a random 64 KiB chunk
// (go test -bench BG4Hist ./xet/xorb: the two in one run).
func BenchmarkBG4Hist(b *testing.B) {
	chunk := vectors.SplitMix(65536, 5)
	for _, c := range []struct {
		name string
		fn   func([]byte) [4][9]uint32
	}{{"packed", bg4Hist}, {"by-byte", histByByte}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				c.fn(chunk)
			}
		})
	}
}
