package gitrepo

import (
	"net/url"
	"strings"
	"testing"
)

// TestLocalPathWindows feeds the remotes a Windows user has (git for Windows's forms) to the rules
// LocalPath uses on Windows; they run on every machine.
func TestLocalPathWindows(t *testing.T) {
	const base = `C:\work\proj`
	for _, c := range []struct {
		in, want string
		local    bool
	}{
		{`C:\repos\x.git`, `C:\repos\x.git`, true},
		{`C:/repos/x.git`, `C:\repos\x.git`, true},
		{`c:\repos\..\x.git\`, `c:\x.git`, true},
		{`file:///C:/repos/x.git`, `C:\repos\x.git`, true},
		{`file:///C:/My%20Repos/x.git`, `C:\My Repos\x.git`, true},
		{`C:x.git`, `C:\work\proj\x.git`, true},  // drive-relative, base on that drive
		{`D:x.git`, `D:x.git`, true},             // drive-relative, another drive: Windows resolves it
		{`..\x.git`, `C:\work\x.git`, true},      // relative
		{`\repos\x.git`, `C:\repos\x.git`, true}, // rooted on base's drive
		{`\\server\share\x.git`, `\\server\share\x.git`, true},
		{`//server/share/repos/x.git`, `\\server\share\repos\x.git`, true},
		{`file://server/share/x.git`, `\\server\share\x.git`, true},
		{`file:////server/share/x.git`, `\\server\share\x.git`, true},
		{`git@host:org/x.git`, "", false},
		{`host:x.git`, "", false},
		{`https://host/x.git`, "", false},
		{`ssh://host/x.git`, "", false},
	} {
		got, ok := localPath(c.in, base, true)
		if ok != c.local || got != c.want {
			t.Errorf("localPath(%q): %q, %v; want %q, %v", c.in, got, ok, c.want, c.local)
		}
	}
}

// TestFileURLWindows: the file:// URL written for a Windows path reads back as that path (the
// drive is not taken for a host, as file://C:/x would be).
func TestFileURLWindows(t *testing.T) {
	for _, c := range []struct{ path, url string }{
		{`C:\repos\x.git`, `file:///C:/repos/x.git`},
		{`\\server\share\x.git`, `file://server/share/x.git`},
	} {
		u := fileURL(c.path, true)
		if u != c.url {
			t.Errorf("fileURL(%q) = %q, want %q", c.path, u, c.url)
		}
		if p, ok := localPath(u, `D:\`, true); !ok || p != c.path {
			t.Errorf("localPath(%q) = %q, %v; want %q", u, p, ok, c.path)
		}
	}
	if u := fileURL("/srv/x.git", false); u != "file:///srv/x.git" {
		t.Errorf("fileURL unix: %q", u)
	}
}

// FuzzLocalPathWindows: any remote string, with Windows's rules or not: no panic; a local result
// under Windows's rules has only backslashes, and one that is absolute reads back from its file URL.
func FuzzLocalPathWindows(f *testing.F) {
	for _, s := range []string{`C:\repos\x.git`, `file:///C:/repos/x.git`, `\\server\share\x.git`, `C:x.git`, `git@host:x.git`, `//`, `file://`, `C:`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		localPath(s, `/work/proj`, false)
		p, ok := localPath(s, `C:\work\proj`, true)
		if !ok {
			return
		}
		if strings.Contains(p, "/") {
			t.Fatalf("localPath(%q) = %q: a forward slash", s, p)
		}
		if !winIsAbs(p) || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || strings.ContainsRune("%?#", r) }) {
			return // drive-relative, or no Windows name (control characters), or not URL-safe: git-lfs writes file URLs unescaped too
		}
		u, err := url.Parse(fileURL(p, true))
		if err != nil || strings.HasPrefix(p, `\\`) && u.Host != strings.SplitN(p[2:], `\`, 2)[0] {
			return // a UNC server name no URL carries as its host (a space, an @ in it)
		}
		if back, ok := localPath(fileURL(p, true), `D:\`, true); !ok || back != p {
			t.Fatalf("localPath(%q) = %q; its URL %q reads back as %q, %v", s, p, fileURL(p, true), back, ok)
		}
	})
}
