//go:build !unix

package fs

import (
	"errors"
	"os"
)

// packsSupported: without flock there is no safe single writer per pack, so every blob is a file.
const packsSupported = false

func tryLock(*os.File) (bool, error) { return false, errors.New("no flock on this platform") }
