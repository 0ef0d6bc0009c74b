//go:build xetcrash && unix

package migrate

import (
	"os"
	"syscall"
)

// crashPoint kills this process with SIGKILL when CrashEnv names point (test builds only).
func crashPoint(point string) {
	if os.Getenv(CrashEnv) == point {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
