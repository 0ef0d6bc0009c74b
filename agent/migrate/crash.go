package migrate

import (
	"os"
	"syscall"
)

// CrashEnv names a point at which a migration kills itself with SIGKILL, for the fault tests (a
// kill -9 at a known moment): "walk" (after the walk, before any upload), "xorb" (after the second
// xorb a run stores, mid-session, before its shard), "shard" (after the first session's shard is
// registered and recorded).
const CrashEnv = "GIT_XET_MIGRATE_CRASH"

func crashPoint(name string) {
	if os.Getenv(CrashEnv) == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
