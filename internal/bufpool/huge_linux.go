package bufpool

import "syscall"

// hugePages advises the kernel to back b with transparent huge pages (MADV_HUGEPAGE; most
// distributions enable them only where asked, "madvise"). Filling a fresh buffer then faults and
// zeroes 2 MiB at a time instead of 4 KiB, with one page fault where there were 512. A kernel
// without them ignores the advice (an error here changes nothing).
func hugePages(b []byte) {
	_ = syscall.Madvise(b[:cap(b)], syscall.MADV_HUGEPAGE)
}
