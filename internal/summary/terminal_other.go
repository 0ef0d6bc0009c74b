//go:build !unix

package summary

import "errors"

// Print writes nothing where there is no /dev/tty to write to (Windows: git for Windows's
// terminals are not reached this way).
func Print(line string) error {
	return errors.New("the summary line is written on unix terminals only")
}
