package gitrepo

import (
	"net/url"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// onWindows selects Windows's path rules in LocalPath and fileURL; the rules themselves take it as
// an argument so that tests run both on any machine.
const onWindows = runtime.GOOS == "windows"

// LocalPath returns the directory a local remote URL names: a file:// URL's path or a plain path
// (relative paths are taken from base, the repository's top directory, as git does). ok is false
// for network remotes (https://, ssh://, host:path).
//
// On Windows it also takes what git for Windows does: drive paths (C:\repos\x.git, C:/repos/x.git),
// file:///C:/repos/x.git, drive-relative paths (C:x.git: from base when base is on that drive, else
// left for Windows to resolve against that drive's current directory), UNC paths
// (\\server\share\x.git, //server/share/x.git) and file://server/share/x.git. A one-letter "host"
// is a drive there, never scp-like ssh.
func LocalPath(remoteURL, base string) (string, bool) {
	return localPath(remoteURL, base, onWindows)
}

func localPath(remoteURL, base string, windows bool) (string, bool) {
	if strings.HasPrefix(remoteURL, "file://") {
		u, err := url.Parse(remoteURL)
		if err != nil {
			return "", false
		}
		if !windows {
			if u.Host != "" && u.Host != "localhost" {
				return "", false
			}
			return filepath.Clean(filepath.FromSlash(u.Path)), true
		}
		p := u.Path
		if u.Host != "" && u.Host != "localhost" {
			p = "//" + u.Host + p // file://server/share: a UNC path
		} else if len(p) >= 3 && p[0] == '/' && isDriveLetter(p[1]) && p[2] == ':' {
			p = p[1:] // file:///C:/x: the drive path C:/x
		} else if strings.HasPrefix(p, "//") {
			p = "//" + strings.TrimLeft(p, "/") // file:////server/share
		}
		return winClean(p), true
	}
	if remoteURL == "" || strings.Contains(remoteURL, "://") {
		return "", false
	}
	if windows {
		return winLocalPath(remoteURL, base)
	}
	// scp-like host:path (git treats a colon before the first slash as a host separator).
	if i := strings.IndexByte(remoteURL, ':'); i > 0 && !strings.Contains(remoteURL[:i], "/") && !filepath.IsAbs(remoteURL) {
		return "", false
	}
	p := filepath.FromSlash(remoteURL)
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), true
}

func winLocalPath(p, base string) (string, bool) {
	drive := len(p) >= 2 && isDriveLetter(p[0]) && p[1] == ':'
	if i := strings.IndexByte(p, ':'); i > 0 && !drive && !strings.ContainsAny(p[:i], `/\`) {
		return "", false // host:path, ssh
	}
	switch {
	case winIsAbs(p):
		return winClean(p), true
	case drive: // C:x.git, relative to the drive's current directory
		if len(base) >= 2 && strings.EqualFold(base[:2], p[:2]) {
			return winClean(base + `\` + p[2:]), true
		}
		return winClean(p), true
	case strings.HasPrefix(p, `\`) || strings.HasPrefix(p, "/"): // \x.git: the root of base's drive
		vol, _ := winSplit(winClean(base))
		return winClean(vol + p), true
	}
	return winClean(base + `\` + p), true
}

func isDriveLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// winIsAbs: C:\x, C:/x, \\server\share\x or //server/share/x.
func winIsAbs(p string) bool {
	if len(p) >= 3 && isDriveLetter(p[0]) && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		return true
	}
	return len(p) >= 2 && (p[0] == '\\' || p[0] == '/') && (p[1] == '\\' || p[1] == '/')
}

// winSplit splits a Windows path into its volume ("C:", `\\server\share`, or "") and the rest.
func winSplit(p string) (vol, rest string) {
	p = strings.ReplaceAll(p, "/", `\`)
	if len(p) >= 2 && isDriveLetter(p[0]) && p[1] == ':' {
		return p[:2], p[2:]
	}
	if strings.HasPrefix(p, `\\`) {
		parts := strings.SplitN(strings.TrimLeft(p, `\`), `\`, 3)
		if len(parts) >= 2 && parts[0] != "" && parts[1] != "" { // \\server\share
			vol = `\\` + parts[0] + `\` + parts[1]
			if len(parts) == 3 {
				rest = `\` + parts[2]
			}
			return vol, rest
		}
	}
	return "", p
}

// winClean is filepath.Clean with Windows's rules: backslashes, the volume kept, . and ..
// resolved below it.
func winClean(p string) string {
	vol, rest := winSplit(p)
	if rest == "" {
		if strings.HasPrefix(vol, `\\`) {
			return vol + `\`
		}
		return vol + "."
	}
	c := path.Clean(strings.ReplaceAll(rest, `\`, "/"))
	return vol + strings.ReplaceAll(c, "/", `\`)
}

// fileURL is the file:// URL of the absolute path p, as git-lfs writes one: file:///srv/x.git,
// file:///C:/repos/x.git, and file://server/share/x.git for a UNC path.
func fileURL(p string, windows bool) string {
	if !windows {
		return "file://" + filepath.ToSlash(p)
	}
	vol, rest := winSplit(p)
	if strings.HasPrefix(vol, `\\`) {
		return "file:" + strings.ReplaceAll(vol+rest, `\`, "/")
	}
	return "file:///" + strings.ReplaceAll(vol+rest, `\`, "/")
}
