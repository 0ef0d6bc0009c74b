//go:build unix && !linux

package bufpool

// hugePages: transparent huge pages are a Linux feature.
func hugePages(b []byte) {}
