//go:build race

package download_test

// raceEnabled: built with -race, whose detector multiplies memory and CPU, so the peak-RSS tests
// measure it, not the code; they run in the ordinary build.
const raceEnabled = true
