//go:build !unix

package main

// cpu is not measured here (no getrusage): zero.
func cpu() (user, sys float64) { return 0, 0 }
