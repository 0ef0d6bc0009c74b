package localshards

import (
	"os"
	"syscall"
	"unsafe"
)

// hugeMin: arrays smaller than two huge pages are left alone.
const hugeMin = 4 << 20

// adviseHuge asks the kernel to back s with transparent huge pages (MADV_HUGEPAGE), so that random
// probes into a large array need far fewer TLB entries and page walks. Call it right after allocating
// s, before writing it: pages the runtime has not touched yet are then faulted in as huge pages. It is
// advice only: errors (old kernels, THP disabled) are ignored. Used for the filter and the table of
// large segments, whose lookups are random probes (in a VM every TLB miss is a two-level page walk).
func adviseHuge[T any](s []T) {
	n := uintptr(len(s)) * unsafe.Sizeof(*new(T))
	if n < hugeMin {
		return
	}
	page := uintptr(os.Getpagesize())
	base := unsafe.Pointer(unsafe.SliceData(s))
	start := uintptr(base)
	lo := (start + page - 1) &^ (page - 1) // madvise wants a page-aligned start
	hi := (start + n) &^ (page - 1)
	if hi <= lo {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(base, lo-start)), hi-lo)
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
}
