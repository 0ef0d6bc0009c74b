package fs

import (
	"os"
	"syscall"
)

// datasync makes f's data durable: fdatasync, which unlike fsync leaves out the inode's timestamps
// (a pack's size does not change when its records overwrite the zeros written ahead, see grow, so a
// commit flushes the records' pages and nothing else).
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
