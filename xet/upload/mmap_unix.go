//go:build unix

package upload

import "syscall"

// mapBody maps n bytes of anonymous memory outside the Go heap (page-aligned, zeroed, faulted in
// on first touch), or returns nil when the mapping fails.
func mapBody(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return b
}

// unmapBody releases a buffer from mapBody; heap buffers (munmap refuses them) are left to the GC.
func unmapBody(b []byte) {
	_ = syscall.Munmap(b[:cap(b)])
}
