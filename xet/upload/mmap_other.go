//go:build !unix

package upload

// mapBody: no anonymous mappings here; the caller allocates on the heap.
func mapBody(n int) []byte { return nil }

// unmapBody: heap buffers are left to the GC.
func unmapBody(b []byte) {}
