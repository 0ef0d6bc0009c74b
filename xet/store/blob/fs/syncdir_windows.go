//go:build windows

package fs

// flushDir does nothing on Windows, which has no flush of a directory: FlushFileBuffers on the
// read-only handle os.Open gives a directory fails with "Access is denied" (golang/go#75541), so
// syncing would fail every blob write. A name's creation there is an NTFS metadata operation,
// journaled and committed by the file system on its own schedule, as for every Windows program.
func flushDir(string) error { return nil }
