//go:build unix

package bufpool

import (
	"testing"
)

func isMapped(b []byte) bool { _, ok := mapped.Load(base(b)); return ok }

// Map hands out an empty, writable buffer of at least the size asked (in whole huge pages from
// 2 MiB on); Unmap releases only what Map made: a heap buffer given to it stays usable.
func TestMapUnmap(t *testing.T) {
	b := Map(3<<20 + 5)
	if b == nil {
		t.Fatal("Map failed")
	}
	if len(b) != 0 || cap(b) < 3<<20+5 || cap(b)%hugePage != 0 {
		t.Fatalf("Map(3 MiB + 5) gave len %d cap %d; want len 0, cap in whole 2 MiB pages", len(b), cap(b))
	}
	b = b[:cap(b)]
	for i := range b {
		b[i] = byte(i)
	}
	if !isMapped(b) {
		t.Fatal("a mapped buffer is not known as mapped")
	}
	Unmap(b)
	if isMapped(b) {
		t.Fatal("Unmap left the buffer known as mapped")
	}
	small := Map(1000)
	if small == nil || cap(small) < 1000 {
		t.Fatalf("Map(1000) gave cap %d", cap(small))
	}
	Unmap(small)

	heap := make([]byte, 8<<20) // page-aligned at this size: munmap would accept it
	Unmap(heap)
	Unmap(nil)
	for i := range heap {
		heap[i] = 1 // faults if Unmap unmapped the heap's memory
	}
}
