package leader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// Versions of a file (a few blocks rewritten, or bytes inserted at its start) share sampled chunks;
// files that are not versions of one another, and a file rewritten whole, share none.
func TestSamplesRelateVersionsOnly(t *testing.T) {
	dir := t.TempDir()
	const size = 8 << 20
	v1 := testutil.RandomBytes(size, 1)
	v2 := append([]byte(nil), v1...)
	for i := 0; i < 10; i++ {
		copy(v2[i*size/10+12345:], testutil.RandomBytes(64<<10, uint64(10+i)))
	}
	grown := append(testutil.RandomBytes(3000, 5), v1...)
	files := map[string][]byte{"v1": v1, "v2": v2, "grown": grown, "other": testutil.RandomBytes(size, 2), "small": v1[:2<<20]}
	s := map[string]sample{}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		if s[name], err = sampleFile(p, int64(len(b))); err != nil {
			t.Fatal(err)
		}
		if len(s[name]) == 0 {
			t.Fatalf("%s: empty sample", name)
		}
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{{"v1", "v2", true}, {"v1", "grown", true}, {"v1", "small", true}, {"v1", "other", false}, {"v2", "other", false}} {
		if got := s[c.a].shares(s[c.b]); got != c.want {
			t.Errorf("%s and %s share sampled chunks: %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
