//go:build !unix

package handover

import (
	"errors"
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
