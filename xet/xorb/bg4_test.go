package xorb

import (
	"bytes"
	"math"
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
