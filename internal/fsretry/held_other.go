//go:build !windows

package fsretry

// held: another process's open file never stops a rename or removal here; nothing is retried.
func held(error) bool { return false }
