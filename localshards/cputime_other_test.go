//go:build !unix

package localshards

import "time"

// cpuTime is not measured on this platform; the cpu-ms/op metric then reads 0.
func cpuTime() time.Duration { return 0 }
