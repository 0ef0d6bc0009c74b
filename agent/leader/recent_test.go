package leader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// A recent download is offered from its link, which outlives git-lfs's rename of the file, until
// close removes it.
func TestRecentDownloads(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(out, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	x1, x2 := hash.Chunk([]byte("a")), hash.Chunk([]byte("b"))
	var r recentDownloads
	link := recentLink(dir, "oid")
	if err := r.add(out, link, []span.Span{{Xorb: x1, Pos: 0}, {Xorb: x2, Pos: 4, Path: "/elsewhere"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(out, filepath.Join(dir, "moved")); err != nil { // git-lfs moves it into objects
		t.Fatal(err)
	}
	sp := r.Spans([]hash.Hash{x1})
	if len(sp) != 1 || sp[0].Path != link {
		t.Fatalf("spans %+v, want one from %s", sp, link)
	}
	if b, err := os.ReadFile(sp[0].Path); err != nil || string(b) != "0123456789" {
		t.Fatalf("the link reads %q, %v", b, err)
	}
	if sp := r.Spans([]hash.Hash{x2}); len(sp) != 1 || sp[0].Path != "/elsewhere" {
		t.Fatalf("a span of another file: %+v", sp)
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(link); !os.IsNotExist(err) {
		t.Fatalf("link left after close: %v", err)
	}
	if len(r.Spans([]hash.Hash{x1})) != 0 {
		t.Fatal("spans offered after close")
	}
}
