package handover

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Small hand-overs travel in the variable; large ones in a private file that Decode removes; the
// bytes and the flag come back as they went.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, h := range []Handover{
		{},
		{Ahead: []byte("{\"event\":\"init\"}\n{\"ev"), InitAnswered: true},
		{Ahead: bytes.Repeat([]byte("x\x00\n"), 40<<10)},
	} {
		v, err := Encode(h, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) > inlineLimit+8 {
			t.Fatalf("value of %d bytes: over the limit of one variable", len(v))
		}
		left, _ := os.ReadDir(dir)
		if strings.Contains(v, fileTag) != (len(left) == 1) {
			t.Fatalf("value %.40q with %d files in the temp dir", v, len(left))
		}
		if len(left) == 1 {
			fi, _ := os.Stat(filepath.Join(dir, left[0].Name()))
			if fi.Mode().Perm()&0o077 != 0 {
				t.Fatalf("hand-over file mode %v: readable by others", fi.Mode())
			}
		}
		got, err := Decode(v)
		if err != nil || !bytes.Equal(got.Ahead, h.Ahead) || got.InitAnswered != h.InitAnswered {
			t.Fatalf("round trip: %v, %d bytes answered %v; want %d bytes answered %v", err, len(got.Ahead), got.InitAnswered, len(h.Ahead), h.InitAnswered)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("Decode left %d files", len(left))
		}
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	for _, v := range []string{"", "x", "2:b64:", "1:", "1:b64:***", "0:file:/nonexistent/handover"} {
		if _, err := Decode(v); err == nil {
			t.Errorf("Decode(%q) accepted it", v)
		}
	}
}
