//go:build !unix

package bufpool

// Map: no anonymous mappings here; the caller allocates on the heap.
func Map(n int) []byte { return nil }

// Unmap: heap buffers are left to the GC.
func Unmap(b []byte) {}
