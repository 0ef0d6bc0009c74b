//go:build unix

package regfile

import "syscall"

// noBlock makes the open of a fifo return at once; it changes nothing for a regular file.
const noBlock = syscall.O_NONBLOCK
