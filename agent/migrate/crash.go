package migrate

// CrashEnv names a point at which a migration kills itself with SIGKILL, for the fault tests (a
// kill -9 at a known moment): "walk" (after the walk, before any upload), "xorb" (after the second
// xorb a run stores, mid-session, before its shard), "shard" (after the first session's shard is
// registered and recorded). Only a binary built with the build tag xetcrash, on a unix system,
// reads it (crashkill.go); in any other build crashPoint does nothing (crashnop.go), so a release
// binary carries no way to kill itself.
const CrashEnv = "GIT_XET_MIGRATE_CRASH"
