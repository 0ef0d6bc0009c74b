//go:build unix

package test

import "syscall"

// otherFS reports whether a and b lie on different file systems.
func otherFS(a, b string) bool {
	var sa, sb syscall.Stat_t
	return syscall.Stat(a, &sa) == nil && syscall.Stat(b, &sb) == nil && sa.Dev != sb.Dev
}
