package main

import "runtime/debug"

// buildVersion is set at link time (-ldflags "-X main.buildVersion=v1.2.3"); otherwise the module
// version from the build information, or "dev".
var buildVersion = ""

func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
