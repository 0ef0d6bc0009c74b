package testutil

import "time"

// Eventually polls cond until it holds or within has passed, and reports whether it held (its last
// answer, asked once more at the deadline). The polls start 1 ms apart and back off to 20 ms, so a
// condition that holds soon is seen soon, and one that takes seconds costs little CPU. It is the
// tests' one way to wait for something another goroutine or process does: never a sleep for
// ordering.
func Eventually(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(min(pause, time.Until(deadline)))
		pause = min(2*pause, 20*time.Millisecond)
	}
	return cond()
}
