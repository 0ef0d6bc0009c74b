package download

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWritebackOS starts the write-back of f's dirty pages (sync_file_range with
// SYNC_FILE_RANGE_WRITE only: no wait for pages already in flight, none for the disk).
func startWritebackOS(f *os.File) {
	for unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE) == unix.EINTR {
	}
}
