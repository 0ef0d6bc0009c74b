//go:build !xetcrash || !unix

package migrate

import "testing"

// A default build ignores CrashEnv: a migration run with it set at every point goes on (were the
// hook in, this test process would die of SIGKILL here).
func TestCrashPointIgnoredWithoutTag(t *testing.T) {
	for _, point := range []string{"walk", "xorb", "shard"} {
		t.Setenv(CrashEnv, point)
		crashPoint(point)
	}
}
