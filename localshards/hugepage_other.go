//go:build !linux

package localshards

// adviseHuge is a no-op where transparent huge pages are not available.
func adviseHuge[T any](s []T) {}
