// Package fsretry renames and removes files where another process may hold them open.
//
// On Windows a rename onto a file, or a removal of a file, that another process has open without
// FILE_SHARE_DELETE fails (ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION)
// until that process closes it: another agent reading a shard or chunk map, a virus scanner or the
// search indexer opening a new file. Such holds are short, so Rename and Remove retry those errors
// with backoff (10 ms doubling to 320 ms, at most Budget in all) and then return the last error; a
// lasting ERROR_ACCESS_DENIED (a read-only file, a missing permission) is so reported after Budget.
// Elsewhere (unix: an open file can be renamed over and unlinked) they are os.Rename and
// os.Remove, tried once.
package fsretry

import (
	"os"
	"time"
)

// Budget is the most time Rename and Remove spend retrying one operation.
const Budget = 5 * time.Second

// Rename is os.Rename, retried while another process holds oldpath or newpath (Windows).
func Rename(oldpath, newpath string) error {
	return retry(func() error { return os.Rename(oldpath, newpath) }, held, time.Sleep)
}

// Remove is os.Remove, retried while another process holds name (Windows). A missing file is
// its error at once (fs.ErrNotExist), as with os.Remove.
func Remove(name string) error {
	return retry(func() error { return os.Remove(name) }, held, time.Sleep)
}

// retry runs op until it succeeds, fails with an error transient does not accept, or the next
// wait would pass Budget; it returns op's last error.
func retry(op func() error, transient func(error) bool, sleep func(time.Duration)) error {
	wait, spent := 10*time.Millisecond, time.Duration(0)
	for {
		err := op()
		if err == nil || !transient(err) || spent+wait > Budget {
			return err
		}
		sleep(wait)
		spent += wait
		wait = min(2*wait, 320*time.Millisecond)
	}
}
