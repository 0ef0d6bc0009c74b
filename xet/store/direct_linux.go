package store

import (
	"os"
	"syscall"
	"unsafe"
)

// directAlign is the alignment O_DIRECT needs of the buffer address, file offset and length (the
// page size covers every logical block size in use).
const directAlign = 4096

// minDirect: smaller writes go through the page cache (the O_DIRECT setup is not worth it).
const minDirect = 1 << 20

// writeDirect writes the longest prefix of b whose length is a multiple of directAlign to the file
// at path at offset 0, with O_DIRECT: the data goes from b to the disk without being copied into the
// page cache, which for a 64 MiB xorb saves most of the CPU a buffered write costs (and the fsync
// that follows has nothing left to flush but the tail). It returns how many bytes it wrote: 0 when b
// is too short or misaligned, or the filesystem refuses O_DIRECT (tmpfs, some FUSE), in which case
// the caller writes everything the usual way.
func writeDirect(path string, b []byte) int {
	n := len(b) &^ (directAlign - 1)
	if n < minDirect || uintptr(unsafe.Pointer(&b[0]))%directAlign != 0 {
		return 0
	}
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	w := 0
	for w < n {
		k, err := f.WriteAt(b[w:n], int64(w))
		w += k
		if err != nil {
			// Keep what was written when it is aligned; the caller writes the rest.
			return w &^ (directAlign - 1)
		}
	}
	return n
}
