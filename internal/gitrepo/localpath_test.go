package gitrepo

import "testing"

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
