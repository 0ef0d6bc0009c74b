// Package regfile opens files that must be regular files: those of a cache or a store, whose
// directory lists names anyone who may write it can plant.
package regfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNotRegular is matched by Open's error for a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path (flag: os.O_RDONLY or os.O_RDWR), refusing what is not a regular file (a fifo, a
// device, a directory). The open itself does not wait: the open of a fifo would wait for a writer,
// forever when none comes, often with a lock held that every other reader of the directory waits
// behind.
func Open(path string, flag int) (*os.File, error) {
	f, _, err := OpenStat(path, flag)
	return f, err
}

// OpenStat is Open, and the file's stat.
func OpenStat(path string, flag int) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, flag|noBlock, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is %w (mode %s)", filepath.Base(path), ErrNotRegular, st.Mode())
	}
	return f, st, nil
}
