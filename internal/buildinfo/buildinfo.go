// Package buildinfo says which build a binary of this module is: its version (stamped by a release
// build, else the module version the go command recorded), the VCS commit it was built from, that
// commit's time, and whether the work tree had uncommitted changes. The commit, time and state come
// from the Go build information (debug.ReadBuildInfo), which `go build` records from a git checkout
// unless built with -buildvcs=false.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// stamped is the version a release sets at link time:
//
//	go build -ldflags "-X github.com/git-xet-transfer/git-xet-transfer/internal/buildinfo.stamped=v1.2.3"
var stamped string

// Info describes one build.
type Info struct {
	Version   string // "v1.2.3"; "dev" when neither stamped nor recorded
	Revision  string // the full commit hash; empty when the build has no VCS information
	Time      string // the commit's time (RFC 3339, as git gives it to the go command); may be empty
	Modified  bool   // the work tree had changes not in Revision
	GoVersion string // the Go release that built it ("go1.26.8")
	Platform  string // GOOS/GOARCH of the binary
}

// Get returns this binary's Info (read once per process).
var Get = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return From(bi, stamped)
})

// From builds an Info from build information (nil: none) and a stamped version (empty: none). A
// stamped version wins over the module version; "(devel)" and an empty module version are no
// version.
func From(bi *debug.BuildInfo, stampedVersion string) Info {
	i := Info{Version: stampedVersion, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		if i.Version == "" {
			i.Version = "dev"
		}
		return i
	}
	if bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		i.Version = bi.Main.Version
	}
	if i.Version == "" {
		i.Version = "dev"
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" && goarch != "" {
		i.Platform = goos + "/" + goarch
	}
	return i
}

// String is the one-line description `version` commands print:
//
//	v1.2.3 (commit 0123…cdef, 2026-11-27T10:00:00Z, modified; go1.26.8 linux/amd64)
//
// the commit in full; "no commit recorded" for a build without VCS information.
func (i Info) String() string {
	return fmt.Sprintf("%s (%s; %s %s)", i.Version, i.vcs(i.Revision), i.GoVersion, i.Platform)
}

// UserAgent is the User-Agent header of product at this build:
//
//	git-xet-transfer/v1.2.3 (commit 0123456789ab, 2026-11-27T10:00:00Z; linux/amd64; go1.26.8)
//
// with the commit cut to 12 hex digits and ", modified" after the time when the tree was.
func (i Info) UserAgent(product string) string {
	rev := i.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return fmt.Sprintf("%s/%s (%s; %s; %s)", product, i.Version, i.vcs(rev), i.Platform, i.GoVersion)
}

func (i Info) vcs(rev string) string {
	if rev == "" {
		return "no commit recorded"
	}
	parts := []string{"commit " + rev}
	if i.Time != "" {
		parts = append(parts, i.Time)
	}
	if i.Modified {
		parts = append(parts, "modified")
	}
	return strings.Join(parts, ", ")
}
