//go:build unix

package testutil

import (
	"os"
	"syscall"
	"time"
)

// UnblockFifos lets the readers blocked on the fifos at paths go on (a writer opening a fifo lets a
// reader's open return, and its close ends the read) until done is closed or sends: the clean-up
// of a test that planted fifos where a program should not wait on them.
func UnblockFifos[T any](paths []string, done <-chan T) {
	for {
		for _, p := range paths {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
