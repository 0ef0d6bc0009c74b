//go:build !unix

package testutil

import "time"

// ProcessCPU is not measured on this platform: 0.
func ProcessCPU() time.Duration { return 0 }

// ProcessCPUSplit is not measured on this platform: 0, 0.
func ProcessCPUSplit() (user, sys time.Duration) { return 0, 0 }
