//go:build !linux

package download

import "os"

// startWritebackOS does nothing here: the kernel writes the file back on its own schedule.
func startWritebackOS(f *os.File) {}
