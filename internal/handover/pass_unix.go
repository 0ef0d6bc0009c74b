//go:build unix

package handover

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Pass writes h to a temporary file that is unlinked at once (in dir, the system's temp directory
// when dir is ""), and returns the variable's value, "<0|1>:fd:<n>", naming a descriptor of it
// that an exec'd program inherits (its close-on-exec flag is clear). release closes that
// descriptor, for when the exec failed: the file is gone with it.
func Pass(h Handover, dir string) (value string, release func(), err error) {
	f, err := os.CreateTemp(dir, "git-xet-transfer-handover-*")
	if err != nil {
		return "", nil, fmt.Errorf("handing over to git-xet-transfer: %w", err)
	}
	defer f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return "", nil, fmt.Errorf("handing over to git-xet-transfer: %w", err)
	}
	if _, err := f.Write(h.Ahead); err != nil {
		return "", nil, fmt.Errorf("handing over to git-xet-transfer: writing the hand-over: %w", err)
	}
	// dup: a new descriptor of the same file without close-on-exec, which os.File always sets.
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return "", nil, fmt.Errorf("handing over to git-xet-transfer: %w", err)
	}
	return flag(h) + fdTag + strconv.Itoa(fd), func() { syscall.Close(fd) }, nil
}

// readFD reads the hand-over file inherited as descriptor s (3 or more: 0-2 are the conversation)
// from its start, and closes it, so that neither this process's children nor /proc/<pid>/fd reach
// it afterwards. A descriptor that is not a regular file is left alone (and open): it is not one
// Pass made.
func readFD(s string) ([]byte, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 3 {
		return nil, fmt.Errorf("hand-over value is malformed: descriptor %q", s)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(n, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("the hand-over descriptor %d is not an open file (%v)", n, err)
	}
	f := os.NewFile(uintptr(n), "hand-over")
	defer f.Close()
	return readAll(f)
}
