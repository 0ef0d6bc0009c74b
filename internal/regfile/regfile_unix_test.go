//go:build unix

package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, dir} {
		if f, err := Open(p, os.O_RDONLY); !errors.Is(err, ErrNotRegular) {
			if f != nil {
				f.Close()
			}
			t.Errorf("Open(%s) = %v, want ErrNotRegular", p, err)
		}
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, st, err := OpenStat(file, os.O_RDWR)
	if err != nil || st.Size() != 3 {
		t.Fatalf("Open of a regular file: %v, %v", st, err)
	}
	if _, err := f.WriteAt([]byte("d"), 3); err != nil {
		t.Errorf("writing a file opened O_RDWR: %v", err)
	}
	f.Close()
}
