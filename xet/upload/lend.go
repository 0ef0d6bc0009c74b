package upload

import (
	"fmt"
	"io"
	"os"
	"time"
)

// lending is what lending chunk payloads from a file (Config.Lend) needs: the file, where the
// stream began in it, and what it looked like then. A nil *lending lends nothing.
type lending struct {
	file    *os.File
	base    int64 // the file's offset when Upload began: stream offset 0
	size    int64
	modTime time.Time
}

// lendFrom sets f up to lend from r when r is a regular file whose position and state can be read.
func (f *fileState) lendFrom(r io.Reader) {
	file, ok := r.(*os.File)
	if !ok {
		return
	}
	fi, err := file.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	base, err := file.Seek(0, io.SeekCurrent)
	if err != nil {
		return
	}
	f.lend = &lending{file: file, base: base, size: fi.Size(), modTime: fi.ModTime()}
	f.s.lending = append(f.s.lending, f.lend)
}

// start makes the file's new open xorb x lend from the file.
func (l *lending) start(x *sxorb) {
	if l != nil {
		x.b.Lend(l.file)
	}
}

// at returns the file offset of stream offset off, or -1 (copy, do not lend) without lending.
func (l *lending) at(off int64) int64 {
	if l == nil || off < 0 {
		return -1
	}
	return l.base + off
}

// endLending checks, once every xorb is sent (nothing reads the files any more), that no file lent
// from changed since its upload began.
func (s *Session) endLending() error {
	ls := s.lending
	s.lending = nil
	for _, l := range ls {
		fi, err := l.file.Stat()
		if err != nil {
			return fmt.Errorf("upload: %w", err)
		}
		if fi.Size() != l.size || !fi.ModTime().Equal(l.modTime) {
			return fmt.Errorf("upload: %s changed while it was uploaded (size %d → %d, modified %s)",
				l.file.Name(), l.size, fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
		}
	}
	return nil
}
