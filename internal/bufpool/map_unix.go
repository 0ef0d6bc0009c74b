//go:build unix

package bufpool

import (
	"sync"
	"syscall"
	"unsafe"
)

// Map maps n bytes of anonymous memory outside the Go heap (page-aligned, zeroed, faulted in on
// first touch) for a large buffer, or returns nil when the mapping fails (the caller then
// allocates on the heap). On Linux the mapping asks for transparent huge pages (see hugePages).
// The capacity may exceed n (whole huge pages).
//
// Outside the heap, a 64 MiB buffer does not raise the GC's heap goal by as much (which would let
// that much garbage pile up before a collection).
func Map(n int) []byte {
	if n >= hugePage {
		n = (n + hugePage - 1) &^ (hugePage - 1) // whole huge pages (the kernel then aligns the mapping)
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	hugePages(b)
	mapped.Store(base(b), true)
	return b[:0]
}

// Unmap releases a buffer from Map. Any other buffer (the heap's, which munmap would not refuse
// when it is page-aligned) is left to the GC. Nothing may use b afterwards.
func Unmap(b []byte) {
	if cap(b) == 0 {
		return
	}
	if _, ok := mapped.LoadAndDelete(base(b)); ok {
		_ = syscall.Munmap(b[:cap(b)])
	}
}

// mapped holds the first address of every buffer Map returned and Unmap has not released.
var mapped sync.Map // uintptr → bool

func base(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b[:1]))) }

// hugePage is the size of a transparent huge page on the platforms that have them (x86-64 and
// arm64 with 4 KiB pages).
const hugePage = 2 << 20
