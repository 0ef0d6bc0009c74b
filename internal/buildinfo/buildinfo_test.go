package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	settings := []debug.BuildSetting{
		{Key: "GOOS", Value: "windows"}, {Key: "GOARCH", Value: "arm64"},
		{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-27T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, c := range []struct {
		name, stamped, module string
		settings              []debug.BuildSetting
		want, wantUA          string
	}{
		{"stamped wins", "v1.2.3", "v0.0.0-20261127100000-0123456789ab+dirty", settings,
			"v1.2.3 (commit " + rev + ", 2026-11-27T10:00:00Z, modified; go1.26.8 windows/arm64)",
			"git-xet-transfer/v1.2.3 (commit 0123456789ab, 2026-11-27T10:00:00Z, modified; windows/arm64; go1.26.8)"},
		{"module version", "", "v0.0.0-20261127100000-0123456789ab", settings[:4],
			"v0.0.0-20261127100000-0123456789ab (commit " + rev + ", 2026-11-27T10:00:00Z; go1.26.8 windows/arm64)",
			"git-xet-transfer/v0.0.0-20261127100000-0123456789ab (commit 0123456789ab, 2026-11-27T10:00:00Z; windows/arm64; go1.26.8)"},
		{"devel without vcs", "", "(devel)", settings[:2],
			"dev (no commit recorded; go1.26.8 windows/arm64)",
			"git-xet-transfer/dev (no commit recorded; windows/arm64; go1.26.8)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: c.module}, Settings: c.settings}
			i := From(bi, c.stamped)
			if got := i.String(); got != c.want {
				t.Errorf("String:\n got %s\nwant %s", got, c.want)
			}
			if got := i.UserAgent("git-xet-transfer"); got != c.wantUA {
				t.Errorf("UserAgent:\n got %s\nwant %s", got, c.wantUA)
			}
		})
	}
	if i := From(nil, ""); i.Version != "dev" || i.Revision != "" || !strings.Contains(i.String(), "no commit recorded") {
		t.Errorf("no build information: %+v", i)
	}
}
