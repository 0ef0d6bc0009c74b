//go:build !(goexperiment.simd && amd64)

package main

// mine returns the first counter ≥ from for which the 16-byte chunk (file, counter) is
// indexed (its hash % store.DedupeModulus == 0). Without GOEXPERIMENT=simd it is mineScalar.
func mine(file, from uint64) uint64 { return mineScalar(file, from) }
