//go:build !xetcrash || !unix

package migrate

// crashPoint does nothing: only test builds (tag xetcrash) kill themselves at a CrashEnv point.
func crashPoint(string) {}
