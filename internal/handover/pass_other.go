//go:build !unix

package handover

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Pass writes h to a private temporary file (encodeFile), for a child on the same handles, and
// returns the variable's value naming it. release removes the file if the child did not.
func Pass(h Handover, dir string) (value string, release func(), err error) {
	v, err := encodeFile(h, dir)
	if err != nil {
		return "", nil, err
	}
	path := v[strings.Index(v, fileTag)+len(fileTag):]
	return v, func() { os.Remove(path) }, nil
}

// readFD: descriptors are handed over on unix only.
func readFD(string) ([]byte, error) {
	return nil, errors.New("hand-over value is malformed: a descriptor on a system that hands over files")
}

// encodeFile writes h to a new private file in dir (the system's temp directory when dir is "")
// and returns the variable's value naming it, "<0|1>:file:<path>"; Decode removes the file.
func encodeFile(h Handover, dir string) (string, error) {
	f, err := os.CreateTemp(dir, "git-xet-transfer-handover-*")
	if err != nil {
		return "", fmt.Errorf("handing over to git-xet-transfer: %w", err)
	}
	_, werr := f.Write(h.Ahead)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("handing over to git-xet-transfer: writing %s: %w", f.Name(), werr)
	}
	return flag(h) + fileTag + f.Name(), nil
}
