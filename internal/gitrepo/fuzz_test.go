package gitrepo

import (
	"strings"
	"testing"
)

// ParseList never panics, and printing its entries back in git's form parses to the same entries.
func FuzzParseList(f *testing.F) {
	f.Add("core.bare\nfalse\x00")
	f.Add("a.b\x00c.d\ne\nf\x00\x00")
	f.Add("\n\x00\x00\n")
	f.Fuzz(func(t *testing.T, out string) {
		entries := ParseList(out)
		var b strings.Builder
		for _, e := range entries {
			if e.Key == "" && e.NoValue {
				t.Fatalf("an empty record became an entry: %q", out)
			}
			b.WriteString(e.Key)
			if !e.NoValue {
				b.WriteString("\n" + e.Value)
			}
			b.WriteByte(0)
		}
		again := ParseList(b.String())
		if len(again) != len(entries) {
			t.Fatalf("%q: %d entries, then %d", out, len(entries), len(again))
		}
		for i := range again {
			if again[i] != entries[i] {
				t.Fatalf("%q: entry %d %+v, then %+v", out, i, entries[i], again[i])
			}
		}
	})
}
