package xorb

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
)

// csvText returns n bytes of CSV-like text (no 0xFF bytes, like the reference CSV).
func csvText(n int, seed uint64) []byte {
	r := vectors.SplitMix(n/4+64, seed)
	out := make([]byte, 0, n+128)
	makes := []string{"TESLA", "NISSAN", "CHEVROLET", "FORD", "BMW", "KIA", "TOYOTA"}
	for i := 0; len(out) < n; i++ {
		v := binary.LittleEndian.Uint32(r[(i*4)%(len(r)-4):])
		out = fmt.Appendf(out, "5YJ%05d,%s,%s,%d,WA,%d,%s,Battery Electric Vehicle (BEV),%d\n",
			v%99999, "King", "Seattle", 98000+v%999, 2012+v%13, makes[v%7], v%300)
	}
	return out[:n]
}

// float32Data returns n bytes of little-endian float32 values spread like model weights.
func float32Data(n int, seed uint64) []byte {
	r := vectors.SplitMix(n, seed)
	out := make([]byte, n)
	for i := 0; i+4 <= n; i += 4 {
		u := binary.LittleEndian.Uint32(r[i:])
		// A small value around 0: sign from one bit, magnitude from the rest.
		f := (float64(u&0xFFFFFF)/float64(1<<24) - 0.5) * 0.1
		binary.LittleEndian.PutUint32(out[i:], math.Float32bits(float32(f)))
	}
	return out
}

// halfData returns n bytes of bf16-like values (the top half of float32 weights).
func halfData(n int, seed uint64) []byte {
	f := float32Data(2*n, seed)
	out := make([]byte, n)
	for i := 0; i+2 <= n; i += 2 {
		copy(out[i:], f[2*i+2:2*i+4])
	}
	return out
}

// lz4Tool returns the lz4 command-line tool, skipping the test when it is missing (failing under
// CI=true).
func lz4Tool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("lz4")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("lz4 command-line tool is required under CI: %v", err)
		}
		t.Skipf("lz4 command-line tool not found: %v", err)
	}
	return p
}
