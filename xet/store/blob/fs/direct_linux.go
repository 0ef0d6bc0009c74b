package fs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
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

// copyDirect writes all of r to f, a new empty file, and returns how many bytes it wrote. Whole
// 4 MiB blocks go from an aligned buffer to the disk with O_DIRECT (see writeDirect), as does the
// aligned part of the last block when it is long enough; the rest goes through f. A blob streamed
// in (a xorb checked as it arrives) thus costs the same buffer on every upload and no page cache.
// Where the filesystem refuses O_DIRECT it is an io.Copy.
func copyDirect(f *os.File, r io.Reader) (int64, error) {
	df, err := os.OpenFile(f.Name(), os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return io.Copy(f, r)
	}
	defer df.Close()
	bp := directBufs.Get().(*[]byte)
	defer directBufs.Put(bp)
	buf := *bp
	var off int64
	for {
		k, rerr := io.ReadFull(r, buf)
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			return off, rerr
		}
		d := 0
		if aligned := k &^ (directAlign - 1); aligned >= minDirect {
			if w, err := df.WriteAt(buf[:aligned], off); err == nil {
				d = aligned
			} else {
				d = w &^ (directAlign - 1) // keep what went out aligned; the rest goes through f
			}
		}
		if d < k {
			if _, err := f.WriteAt(buf[d:k], off+int64(d)); err != nil {
				return off + int64(d), err
			}
		}
		off += int64(k)
		if rerr != nil {
			return off, nil
		}
	}
}

// minDirectRead: shorter sections are read through the page cache.
const minDirectRead = 1 << 20

// directReadBuf is how much one direct section reader reads per system call.
const directReadBuf = 4 << 20

// directBufs recycles the aligned buffers of direct section readers.
var directBufs = sync.Pool{New: func() any {
	b := make([]byte, directReadBuf+directAlign)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & (directAlign - 1))
	b = b[off : off+directReadBuf : off+directReadBuf]
	return &b
}}

// openDirectSection returns a reader of the n bytes at off of the file at path that reads them with
// O_DIRECT: straight from the disk into an aligned buffer, without allocating page cache. Xorbs are
// written with O_DIRECT (writeDirect), so a sequential read of one soon after, such as the SHA-256
// check of a registration, would otherwise fill the page cache page by page, which costs several
// times the CPU of the read itself. ok is false (nothing opened) for short sections or where the
// filesystem refuses O_DIRECT: the caller then reads through the page cache.
func openDirectSection(path string, off, n int64) (io.ReadCloser, bool) {
	if n < minDirectRead || off < 0 {
		return nil, false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return nil, false
	}
	d := &directSection{f: f, buf: directBufs.Get().(*[]byte), pos: off &^ (directAlign - 1), skip: int(off & (directAlign - 1)), left: n}
	// The first read shows whether aligned reads work here (a filesystem may take O_DIRECT at open
	// and refuse the reads); if not, the caller reads through the page cache, which also reports a
	// section past the end in its usual words.
	if err := d.fill(); err != nil {
		d.Close()
		return nil, false
	}
	return d, true
}

// directSection reads a section with aligned reads; buf[r:w] holds bytes not yet handed out.
type directSection struct {
	f    *os.File
	buf  *[]byte
	r, w int
	pos  int64 // file offset of the next aligned read
	skip int   // bytes before the section at the start of the first read
	left int64 // section bytes not yet handed out
}

func (d *directSection) Read(p []byte) (int, error) {
	if d.left == 0 {
		return 0, io.EOF
	}
	if d.r == d.w {
		if err := d.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, (*d.buf)[d.r:min(d.w, d.r+int(min(d.left, int64(len(p)))))])
	d.r += n
	d.left -= int64(n)
	return n, nil
}

// fill reads the next aligned block (at most what the section still needs, rounded up).
func (d *directSection) fill() error {
	want := min(int64(len(*d.buf)), (int64(d.skip)+d.left+directAlign-1)&^(directAlign-1))
	k, err := d.f.ReadAt((*d.buf)[:want], d.pos)
	if k <= d.skip {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("reading %s at %d: %w", filepath.Base(d.f.Name()), d.pos, err)
	}
	d.pos += int64(k)
	d.r, d.w = d.skip, k
	d.skip = 0
	return nil
}

func (d *directSection) Close() error {
	if d.buf != nil {
		directBufs.Put(d.buf)
		d.buf = nil
	}
	return d.f.Close()
}
