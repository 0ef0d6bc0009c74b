//go:build !linux

package fs

import (
	"io"
	"os"
)

// writeDirect writes nothing here: the caller writes through the page cache (see the Linux version).
func writeDirect(path string, b []byte) int { return 0 }

// openDirectSection opens nothing here: sections are read through the page cache.
func openDirectSection(path string, off, n int64) (io.ReadCloser, bool) { return nil, false }

// copyDirect writes r to f through the page cache here (see the Linux version).
func copyDirect(f *os.File, r io.Reader) (int64, error) { return io.Copy(f, r) }
