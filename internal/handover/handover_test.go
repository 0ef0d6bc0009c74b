package handover

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The bytes and the flag come back as they went, however large; the value names where they are
// and holds none of them; nothing is left behind once they are taken.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, h := range []Handover{
		{},
		{Ahead: []byte("{\"event\":\"init\"}\n{\"ev"), InitAnswered: true},
		{Ahead: bytes.Repeat([]byte("x\x00\n"), 40<<10)},
	} {
		v, release, err := Pass(h, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) > 300 || (len(h.Ahead) > 0 && strings.Contains(v, string(h.Ahead[:4]))) {
			t.Fatalf("value %.60q holds the bytes", v)
		}
		if left, _ := os.ReadDir(dir); strings.Contains(v, fdTag) && len(left) != 0 {
			t.Fatalf("a passed descriptor's file has a name: %v", left)
		}
		got, err := Decode(v)
		if err != nil || !bytes.Equal(got.Ahead, h.Ahead) || got.InitAnswered != h.InitAnswered {
			t.Fatalf("round trip: %v, %d bytes answered %v; want %d bytes answered %v", err, len(got.Ahead), got.InitAnswered, len(h.Ahead), h.InitAnswered)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("Decode left %d files", len(left))
		}
		release() // after Decode closed it: harmless
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	for _, v := range []string{"", "x", "2:fd:3", "1:", "1:b64:eA==", "1:fd:0", "1:fd:2", "1:fd:x", "0:file:/nonexistent/handover"} {
		if _, err := Decode(v); err == nil {
			t.Errorf("Decode(%q) accepted it", v)
		}
	}
}
