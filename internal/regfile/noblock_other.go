//go:build !unix

package regfile

// noBlock: no fifo in a directory waits for a writer here.
const noBlock = 0
