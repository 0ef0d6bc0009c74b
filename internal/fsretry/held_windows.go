//go:build windows

package fsretry

import (
	"errors"
	"syscall"
)

// The Windows errors of a file another process holds open.
const (
	errorAccessDenied     syscall.Errno = 5
	errorSharingViolation syscall.Errno = 32
	errorLockViolation    syscall.Errno = 33
)

// held reports whether err is a Windows error of a file another process holds open.
func held(err error) bool {
	var e syscall.Errno
	return errors.As(err, &e) && (e == errorAccessDenied || e == errorSharingViolation || e == errorLockViolation)
}
