package chunk

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

func TestGearTable(t *testing.T) {
	if want := vectors.Gear(t); Gear != want {
		for i := range Gear {
			if Gear[i] != want[i] {
				t.Errorf("Gear[%d] = %#016x, reference %#016x", i, Gear[i], want[i])
			}
		}
	}
}

// checkBoundaries compares Boundaries, a Next loop and a streaming Reader with want.
func checkBoundaries(t *testing.T, name string, data []byte, want []int) {
	t.Helper()
	if got := Boundaries(data); !slices.Equal(got, want) {
		t.Errorf("%s: Boundaries = %v, want %v", name, got, want)
	}
	if got := readerBoundaries(t, NewReader(bytes.NewReader(data))); !slices.Equal(got, want) {
		t.Errorf("%s: Reader boundaries = %v, want %v", name, got, want)
	}
}

func TestSplitMixVector(t *testing.T) {
	l := vectors.Lines(t, "SPLITMIX")[0]
	n := vectors.Ints(t, []string{vectors.Field(t, l, "n")})[0]
	seed := vectors.Ints(t, []string{vectors.Field(t, l, "seed")})[0]
	data := vectors.SplitMix(n, uint64(seed))
	for _, f := range l {
		if idx, val, ok := parseDataCheck(f); ok {
			if int(data[idx]) != val {
				t.Errorf("splitmix data[%d] = %d, want %d", idx, data[idx], val)
			}
		}
	}
	found := false
	for _, b := range vectors.Lines(t, "BOUNDARIES") {
		if b[1] == fmt.Sprintf("splitmix(%d,%d)", n, seed) {
			found = true
			checkBoundaries(t, b[1], data, vectors.Ints(t, b[2:]))
		}
	}
	if !found {
		t.Fatal("no BOUNDARIES line for the splitmix data")
	}
}

func TestConstVector(t *testing.T) {
	found := false
	for _, b := range vectors.Lines(t, "BOUNDARIES") {
		var val, n int
		if _, err := fmt.Sscanf(b[1], "const(%d,%d)", &val, &n); err != nil {
			continue
		}
		found = true
		checkBoundaries(t, b[1], bytes.Repeat([]byte{byte(val)}, n), vectors.Ints(t, b[2:]))
	}
	if !found {
		t.Fatal("no BOUNDARIES const(...) line")
	}
}

func TestTriggerVectors(t *testing.T) {
	baseLine := vectors.Lines(t, "TRIGGER_BASE")[0]
	var base []byte
	for _, v := range vectors.Ints(t, baseLine[1:]) {
		base = append(base, byte(v))
	}
	if len(base) != 128 {
		t.Fatalf("trigger base has %d bytes, want 128", len(base))
	}
	cases := vectors.Lines(t, "TRIGGER")
	if len(cases) != 128 {
		t.Fatalf("%d TRIGGER cases, want 128", len(cases))
	}
	for _, l := range cases {
		pad := vectors.Ints(t, []string{vectors.Field(t, l, "pad")})[0]
		data := vectors.Trigger(base, pad)
		var want []int
		for _, f := range l[2:] {
			if idx, val, ok := parseDataCheck(f); ok {
				if int(data[idx]) != val {
					t.Errorf("trigger pad=%d: data[%d] = %d, want %d", pad, idx, data[idx], val)
				}
				continue
			}
			want = append(want, vectors.Ints(t, []string{f})[0])
		}
		checkBoundaries(t, fmt.Sprintf("trigger pad=%d", pad), data, want)
	}
}

// parseDataCheck reads "data[i]=v".
func parseDataCheck(f string) (idx, val int, ok bool) {
	if !strings.HasPrefix(f, "data[") {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(f, "data[%d]=%d", &idx, &val); err != nil {
		return 0, 0, false
	}
	return idx, val, true
}

// slowBoundaries is the rule written out literally: hash every byte from the chunk start, test at
// L >= MinSize, force a cut at MaxSize, reset at each cut.
func slowBoundaries(data []byte) []int {
	var out []int
	var h uint64
	l := 0
	for i, b := range data {
		h = h<<1 + Gear[b]
		l++
		if (l >= MinSize && h&Mask == 0) || l == MaxSize {
			out = append(out, i+1)
			h, l = 0, 0
		}
	}
	if l > 0 {
		out = append(out, len(data))
	}
	return out
}

func TestBoundariesMatchLiteralRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Low-entropy data makes matches frequent enough to exercise cuts near MinSize.
	lowEntropy := make([]byte, 3<<20)
	for i := range lowEntropy {
		lowEntropy[i] = byte(rng.IntN(3))
	}
	random := make([]byte, 3<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for name, data := range map[string][]byte{"low-entropy": lowEntropy, "random": random, "zeros": make([]byte, 1<<20)} {
		want := slowBoundaries(data)
		if got := Boundaries(data); !slices.Equal(got, want) {
			t.Errorf("%s: Boundaries differ from the literal rule (%d vs %d chunks)", name, len(got), len(want))
		}
	}
}

func TestNextContract(t *testing.T) {
	if got := Next(nil); got != 0 {
		t.Errorf("Next(nil) = %d, want 0", got)
	}
	zeros := make([]byte, MaxSize+10)
	// Zeros never match (Gear[0] keeps the top bits set in the steady state), so only forced cuts.
	if got := Next(zeros[:MaxSize-1]); got != 0 {
		t.Errorf("Next(%d zeros) = %d, want 0 (needs more data)", MaxSize-1, got)
	}
	if got := Next(zeros[:MaxSize]); got != MaxSize {
		t.Errorf("Next(%d zeros) = %d, want %d", MaxSize, got, MaxSize)
	}
	if got := Next(zeros); got != MaxSize {
		t.Errorf("Next(%d zeros) = %d, want %d", len(zeros), got, MaxSize)
	}
	if got := Boundaries(nil); got != nil {
		t.Errorf("Boundaries(nil) = %v, want nil", got)
	}
	if got := Boundaries([]byte{1}); !slices.Equal(got, []int{1}) {
		t.Errorf("Boundaries(1 byte) = %v", got)
	}
	// Every cut of random data is within [MinSize, MaxSize] except the last.
	data := vectors.SplitMix(5<<20, 7)
	prev := 0
	b := Boundaries(data)
	for i, e := range b {
		if n := e - prev; n > MaxSize || (n < MinSize && i != len(b)-1) {
			t.Errorf("chunk %d has length %d", i, n)
		}
		prev = e
	}
}

// readerBoundaries drains rd and returns its cumulative chunk ends, checking offsets and hashes.
func readerBoundaries(t *testing.T, rd *Reader) []int {
	t.Helper()
	defer rd.Close()
	var out []int
	var off int64
	for {
		c, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Reader.Next: %v", err)
		}
		if c.Offset != off {
			t.Fatalf("chunk offset %d, want %d", c.Offset, off)
		}
		if c.Hash != hash.Chunk(c.Data) {
			t.Fatalf("chunk at %d: wrong hash", c.Offset)
		}
		off += int64(len(c.Data))
		out = append(out, int(off))
	}
}

// TestPlantedMatches places a 64-byte window after which the gear hash matches the mask (a boundary
// wherever it ends, whatever precedes it) at chunk lengths around MinSize and MaxSize, and checks
// the cuts against the literal rule: matches below MinSize are ignored, one at MinSize cuts.
func TestPlantedMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	w := make([]byte, window)
	for {
		for i := range w {
			w[i] = byte(rng.Uint32())
		}
		var h uint64
		for _, b := range w {
			h = h<<1 + Gear[b]
		}
		if h&Mask == 0 {
			break
		}
	}
	for _, c := range []struct {
		ends  []int // where planted windows end (non-overlapping)
		first int   // the first cut
	}{
		{[]int{8127}, MaxSize}, {[]int{8128}, MaxSize}, {[]int{8191}, MaxSize}, {[]int{8192}, 8192},
		{[]int{8193}, 8193}, {[]int{131071}, 131071}, {[]int{131072}, MaxSize}, {[]int{131073}, MaxSize},
		{[]int{8191, 8300}, 8300}, {[]int{100, 8191, 9000}, 9000}, {[]int{8192, 16384, 16448, 24576}, 8192},
	} {
		ends := c.ends
		// Zeros never match by themselves (the steady state -Gear[0] has its top bits set).
		data := make([]byte, ends[len(ends)-1]+MaxSize+5)
		for _, e := range ends {
			copy(data[e-window:e], w)
		}
		want := slowBoundaries(data)
		if want[0] != c.first {
			t.Fatalf("planted matches at %v: literal rule cut first at %d, want %d", ends, want[0], c.first)
		}
		checkBoundaries(t, fmt.Sprintf("planted %v", ends), data, want)
	}
}

// Boundaries returns the cumulative end offsets of all chunks of data (a whole file), from a plain
// Next loop: the reference the streaming Reader is checked against. Empty -> nil.
func Boundaries(data []byte) []int {
	if len(data) == 0 {
		return nil
	}
	out := make([]int, 0, len(data)/TargetSize+2)
	pos := 0
	for pos < len(data) {
		k := Next(data[pos:])
		if k == 0 {
			k = len(data) - pos
		}
		pos += k
		out = append(out, pos)
	}
	return out
}
