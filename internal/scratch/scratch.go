// Package scratch holds a process's private temp files: created, then unlinked at once where the
// platform allows (so nothing is left behind even when the process dies), written by appending and
// read back by offset.
package scratch

import (
	"fmt"
	"io"
	"os"
)

// File is a scratch file. It is not safe for concurrent use.
type File struct {
	f    *os.File
	path string // non-empty while the file is still linked (removed at Close)
	size int64
}

// Create makes a scratch file in dir (the system's temp dir when empty), named after pattern as
// os.CreateTemp does.
func Create(dir, pattern string) (*File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	s := &File{f: f, path: f.Name()}
	if os.Remove(f.Name()) == nil {
		s.path = ""
	}
	return s, nil
}

// Append writes b at the end of the file and returns where it starts.
func (s *File) Append(b []byte) (int64, error) {
	off := s.size
	if _, err := s.f.WriteAt(b, off); err != nil {
		return 0, err
	}
	s.size += int64(len(b))
	return off, nil
}

// ReadAt fills b from offset off; a short read is an error.
func (s *File) ReadAt(b []byte, off int64) error {
	if off < 0 || off+int64(len(b)) > s.size {
		return fmt.Errorf("scratch: read of %d bytes at %d beyond the %d written", len(b), off, s.size)
	}
	_, err := s.f.ReadAt(b, off)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// Size returns the bytes appended so far.
func (s *File) Size() int64 { return s.size }

// Close releases the file (and removes it where it could not be unlinked at once).
func (s *File) Close() error {
	err := s.f.Close()
	if s.path != "" {
		if rerr := os.Remove(s.path); err == nil {
			err = rerr
		}
		s.path = ""
	}
	return err
}
