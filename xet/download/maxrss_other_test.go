//go:build !unix

package download_test

// rusageMaxRSS: no getrusage here; the RSS figures the benchmarks print read 0.
func rusageMaxRSS() int64 { return 0 }
