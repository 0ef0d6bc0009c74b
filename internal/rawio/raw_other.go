//go:build unix && !linux

package rawio

import "syscall"

// Elsewhere the ordinary calls (with the scheduler's bookkeeping) do the same.

func rawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func errnoOf(err error) syscall.Errno {
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	if err != nil {
		return syscall.EIO
	}
	return 0
}
